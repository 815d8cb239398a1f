// Conservative weights in parallel: cells as spherical polygons (sphere.hpp), a distributed
// search by bounding caps, the source cells each rank needs fetched with the plan engine, and
// exact intersection areas. See weightgen.hpp for the method and its normalisations.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/weightgen.hpp"
#include "kdtree.hpp"
#include "sphere.hpp"

namespace estuary {

using i64 = std::int64_t;
using sphere::Cap;
using sphere::Polygon;
using sphere::Vec3;

const char* name_of(ConservNormalization n) {
  switch (n) {
    case ConservNormalization::fracarea: return "fracarea";
    case ConservNormalization::destarea: return "destarea";
    case ConservNormalization::none: return "none";
  }
  return "?";
}

namespace {

constexpr const char* kWhere = "conservative_weights";
// An intersection smaller than this part of the destination cell is two cells touching along
// an edge or at a corner (rounding leaves a sliver of ~1e-17 there), not an overlap.
constexpr double kTouching = 1e-15;

// Whether the grid's edges between corners of equal latitude are circles of latitude: the
// lon-lat kinds, and any 4-corner grid whose every cell is a lon-lat box (CDO's test, which CDO
// makes on a sample of cells). Collective.
bool latitude_edges(const Grid& g, bool allowed, MPI_Comm comm) {
  int ok = 0;
  if (allowed) {
    if (g.kind == GridKind::lonlat || g.kind == GridKind::gaussian || g.kind == GridKind::reduced_gaussian) {
      ok = 1;
    } else if (g.ncorner == 4) {
      ok = 1;
      for (i64 k = 0; k < g.size() && ok; ++k) {
        const double* lo = &g.corner_lon[static_cast<std::size_t>(4 * k)];
        const double* la = &g.corner_lat[static_cast<std::size_t>(4 * k)];
        const bool a = la[0] == la[1] && la[2] == la[3] && lo[1] == lo[2] && lo[3] == lo[0];
        const bool b = lo[0] == lo[1] && lo[2] == lo[3] && la[1] == la[2] && la[3] == la[0];
        ok = a || b;
      }
    }
  }
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return ok != 0;
}

Polygon cell_of(const Grid& g, i64 k, bool lat) {
  const std::size_t at = static_cast<std::size_t>(k * g.ncorner);
  return sphere::cell_polygon(&g.corner_lon[at], &g.corner_lat[at], g.ncorner, lat);
}

// The fixed partition of the sphere that pairs the caps: nlat latitude rows of nlon columns,
// bin b owned by rank b mod p.
struct Bins {
  int nlat = 0, nlon = 0;

  explicit Bins(int p) {
    nlat = 16 * static_cast<int>(std::ceil(std::sqrt(static_cast<double>(p))));
    nlon = 2 * nlat;
  }

  template <class F>
  void for_each(const Cap& c, F&& f) const {
    const double lat = std::asin(std::clamp(c.centre.z, -1.0, 1.0));
    const double lon = std::atan2(c.centre.y, c.centre.x);
    const double lo = lat - c.radius, hi = lat + c.radius;
    auto row = [&](double l) {
      return std::clamp(static_cast<int>(std::floor((l + M_PI / 2) / M_PI * nlat)), 0, nlat - 1);
    };
    const int j0 = row(lo), j1 = row(hi);
    // The longitudes a cap spans: all of them when it reaches a pole.
    int i0 = 0, i1 = nlon - 1;
    if (hi < M_PI / 2 && lo > -M_PI / 2 && std::sin(c.radius) < std::cos(lat)) {
      const double dl = std::asin(std::sin(c.radius) / std::cos(lat));
      auto col = [&](double l) { return static_cast<int>(std::floor((l + M_PI) / (2 * M_PI) * nlon)); };
      i0 = col(lon - dl);
      i1 = col(lon + dl);
      if (i1 - i0 >= nlon) i0 = 0, i1 = nlon - 1;
    }
    for (int j = j0; j <= j1; ++j)
      for (int i = i0; i <= i1; ++i) f(j * nlon + ((i % nlon) + nlon) % nlon);
  }
};

// Caps travel as 5 int64: the centre and radius bit for bit, and an id.
void put_cap(std::vector<i64>& out, const Cap& c, i64 id) {
  out.push_back(std::bit_cast<i64>(c.centre.x));
  out.push_back(std::bit_cast<i64>(c.centre.y));
  out.push_back(std::bit_cast<i64>(c.centre.z));
  out.push_back(std::bit_cast<i64>(c.radius));
  out.push_back(id);
}

Cap get_cap(const i64* m) {
  return {{std::bit_cast<double>(m[0]), std::bit_cast<double>(m[1]), std::bit_cast<double>(m[2])},
          std::bit_cast<double>(m[3])};
}

// Sends each cap to the owners of the bins it touches, once per owner.
std::vector<std::vector<i64>> deal_caps(const std::vector<Cap>& caps, const std::vector<i64>& ids, const Bins& bins,
                                        int p) {
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  std::vector<int> seen(static_cast<std::size_t>(p), -1);
  for (std::size_t k = 0; k < caps.size(); ++k)
    bins.for_each(caps[k], [&](int b) {
      const int owner = b % p;
      if (seen[static_cast<std::size_t>(owner)] == static_cast<int>(k)) return;
      seen[static_cast<std::size_t>(owner)] = static_cast<int>(k);
      put_cap(out[static_cast<std::size_t>(owner)], caps[k], ids[k]);
    });
  return out;
}

bool caps_meet(const Cap& a, const Cap& b) {
  const double r = a.radius + b.radius;
  return r >= M_PI || sphere::angle(a.centre, b.centre) <= r;
}

// At a bin owner: every (destination cap, source cap) pair that meets, as
// (destination's local index, source's global index) per rank that sent the destination.
std::vector<std::vector<i64>> pair_caps(const std::vector<i64>& src_msg, const std::vector<i64>& dst_msg,
                                        const std::vector<i64>& dst_counts, int p) {
  // Source caps by global index, once each (halo copies repeat them).
  const std::size_t ns = src_msg.size() / 5;
  std::vector<std::size_t> order(ns);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return src_msg[5 * a + 4] < src_msg[5 * b + 4]; });
  std::vector<Cap> caps;
  std::vector<i64> ids;
  for (std::size_t a : order) {
    if (!ids.empty() && ids.back() == src_msg[5 * a + 4]) continue;
    caps.push_back(get_cap(&src_msg[5 * a]));
    ids.push_back(src_msg[5 * a + 4]);
  }
  // One k-d tree of centres per radius class (factors of 2), so that a query reaches as far as
  // the widest cap of its class and no further.
  std::vector<std::vector<std::int64_t>> cls;
  std::vector<double> cls_r;
  double rmin = INFINITY;
  for (const Cap& c : caps) rmin = std::min(rmin, std::max(c.radius, 1e-12));
  std::vector<Vec3> centres(caps.size());
  for (std::size_t k = 0; k < caps.size(); ++k) {
    centres[k] = caps[k].centre;
    const int b = static_cast<int>(std::floor(std::log2(std::max(caps[k].radius, 1e-12) / rmin)));
    if (static_cast<std::size_t>(b) >= cls.size()) cls.resize(static_cast<std::size_t>(b) + 1), cls_r.resize(cls.size(), 0.0);
    cls[static_cast<std::size_t>(b)].push_back(static_cast<std::int64_t>(k));
    cls_r[static_cast<std::size_t>(b)] = std::max(cls_r[static_cast<std::size_t>(b)], caps[k].radius);
  }
  std::vector<detail::KdTree> trees;
  for (auto& c : cls) trees.emplace_back(centres, std::move(c));

  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  std::vector<std::int64_t> hits;
  std::size_t at = 0;
  for (int r = 0; r < p; ++r) {
    for (i64 m = 0; m < dst_counts[static_cast<std::size_t>(r)] / 5; ++m, at += 5) {
      const Cap d = get_cap(&dst_msg[at]);
      for (std::size_t b = 0; b < trees.size(); ++b) {
        if (trees[b].empty()) continue;
        const double reach = d.radius + cls_r[b];
        hits.clear();
        trees[b].within(d.centre, reach >= M_PI ? 5.0 : 2.0 * (1.0 - std::cos(reach)) * (1 + 1e-12) + 1e-24, hits);
        for (std::int64_t h : hits)
          if (caps_meet(d, caps[static_cast<std::size_t>(h)])) {
            out[static_cast<std::size_t>(r)].push_back(dst_msg[at + 4]);
            out[static_cast<std::size_t>(r)].push_back(ids[static_cast<std::size_t>(h)]);
          }
      }
    }
  }
  return out;
}

struct SourceCells {
  std::vector<i64> index;       // global indices, increasing
  std::vector<Polygon> cell;    // by position in index
  std::vector<std::int32_t> valid;
  i64 position(i64 g) const {
    return std::lower_bound(index.begin(), index.end(), g) - index.begin();
  }
};

// The source cells in `need` (sorted, unique), fetched from the ranks that hold them.
SourceCells fetch_sources(const Grid& src, std::vector<i64> need, bool lat, MPI_Comm comm) {
  std::vector<i64> held = src.points;
  if (held.empty()) {
    held.resize(static_cast<std::size_t>(src.size()));
    std::iota(held.begin(), held.end(), i64{0});
  }
  RedistOptions ro;
  ro.plan.duplicate = DuplicatePolicy::lowest_rank;
  Redist move(Decomp::indices(src.global_size, held), Decomp::indices(src.global_size, need), comm, ro);
  const std::size_t ns = static_cast<std::size_t>(src.size()), nn = need.size(), nc = static_cast<std::size_t>(src.ncorner);
  // One field per corner coordinate, and the mask.
  std::vector<std::vector<double>> from(2 * nc, std::vector<double>(ns)), to(2 * nc, std::vector<double>(nn));
  for (std::size_t k = 0; k < ns; ++k)
    for (std::size_t c = 0; c < nc; ++c) {
      from[c][k] = src.corner_lon[k * nc + c];
      from[nc + c][k] = src.corner_lat[k * nc + c];
    }
  std::vector<std::int32_t> mask_from(ns), mask_to(nn);
  for (std::size_t k = 0; k < ns; ++k) mask_from[k] = src.valid(static_cast<i64>(k)) ? 1 : 0;
  std::vector<Field> fields;
  for (std::size_t f = 0; f < 2 * nc; ++f) fields.emplace_back(from[f], to[f]);
  fields.emplace_back(mask_from, mask_to);
  move.run(fields);

  SourceCells s;
  s.index = std::move(need);
  s.valid = std::move(mask_to);
  s.cell.resize(nn);
  std::vector<double> lo(nc), la(nc);
  for (std::size_t k = 0; k < nn; ++k) {
    for (std::size_t c = 0; c < nc; ++c) lo[c] = to[c][k], la[c] = to[nc + c][k];
    s.cell[k] = sphere::cell_polygon(lo.data(), la.data(), static_cast<int>(nc), lat);
  }
  return s;
}

// The pieces a destination cell is clipped against: the cell itself when it is convex by
// construction (a lon-lat box, a triangle), else the fan of triangles from its centre (as CDO
// does, so that concave cells are right).
void pieces_of(const Polygon& cell, bool lat, std::vector<Polygon>& out) {
  out.clear();
  if (cell.size() == 0) return;
  if (lat || cell.size() == 3) {
    out.push_back(cell);
    return;
  }
  Vec3 c{};
  for (const Vec3& v : cell.v) c = c + v;
  c = sphere::normalized(c);
  for (std::size_t i = 0; i < cell.size(); ++i) {
    Polygon t;
    t.v = {c, cell.v[i], cell.v[(i + 1) % cell.size()]};
    t.e = {sphere::Edge::great_circle, sphere::Edge::great_circle, sphere::Edge::great_circle};
    if (sphere::signed_area(t) > 0) out.push_back(std::move(t));
  }
}

}  // namespace

ConservativeWeights conservative_weights(const Grid& src, const Grid& dst, MPI_Comm comm,
                                         const ConservativeOptions& options) {
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  detail::agree(comm, [&] {
    if (options.order != 1 && options.order != 2)
      throw Error("order must be 1 or 2, not " + std::to_string(options.order), kWhere);
    src.check();
    dst.check();
    if (src.ncorner < 3) throw Error("the source grid " + src.name + " has no cell corners", kWhere);
    if (dst.ncorner < 3) throw Error("the destination grid " + dst.name + " has no cell corners", kWhere);
    i64 sizes[4] = {src.global_size, -src.global_size, src.ncorner, -src.ncorner};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 4, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (sizes[0] != -sizes[1] || sizes[2] != -sizes[3])
      throw Error("the ranks disagree on the source grid's size or corners", kWhere);
    for (i64 k = 0; k < src.size(); ++k)
      if (src.global_index(k) < 0 || src.global_index(k) >= src.global_size)
        throw Error("source point index " + std::to_string(src.global_index(k)) + " outside the grid of " +
                        std::to_string(src.global_size) + " points",
                    kWhere);
  });
  const bool src_lat = latitude_edges(src, options.latitude_edges, comm);
  const bool dst_lat = latitude_edges(dst, options.latitude_edges, comm);

  // 1. Caps of the cells this rank holds, dealt to the bin owners, which pair them.
  const Bins bins(p);
  std::vector<Cap> caps;
  std::vector<i64> ids;
  for (i64 k = 0; k < src.size(); ++k) {
    const Polygon c = cell_of(src, k, src_lat);
    if (c.size() == 0) continue;  // a degenerate cell overlaps nothing
    caps.push_back(sphere::bounding_cap(c));
    ids.push_back(src.global_index(k));
  }
  std::vector<i64> counts;
  const std::vector<i64> src_msg = detail::alltoallv(comm, deal_caps(caps, ids, bins, p), counts);
  std::vector<Polygon> dst_cell(static_cast<std::size_t>(dst.size()));
  caps.clear();
  ids.clear();
  for (i64 k = 0; k < dst.size(); ++k) {
    dst_cell[static_cast<std::size_t>(k)] = cell_of(dst, k, dst_lat);
    if (!dst.valid(k) || dst_cell[static_cast<std::size_t>(k)].size() == 0) continue;
    caps.push_back(sphere::bounding_cap(dst_cell[static_cast<std::size_t>(k)]));
    ids.push_back(k);
  }
  std::vector<i64> dst_counts;
  const std::vector<i64> dst_msg = detail::alltoallv(comm, deal_caps(caps, ids, bins, p), dst_counts);
  const std::vector<i64> pairs = detail::alltoallv(comm, pair_caps(src_msg, dst_msg, dst_counts, p), counts);

  // 2. Candidates per destination cell, and the source cells they name fetched here.
  std::vector<std::vector<i64>> cand(static_cast<std::size_t>(dst.size()));
  std::vector<i64> need;
  for (std::size_t m = 0; m + 1 < pairs.size(); m += 2) {
    cand[static_cast<std::size_t>(pairs[m])].push_back(pairs[m + 1]);
    need.push_back(pairs[m + 1]);
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  const SourceCells s = fetch_sources(src, std::move(need), src_lat, comm);

  // 3. Each destination cell alone: intersections in increasing source index.
  ConservativeWeights out;
  out.dst_area.assign(static_cast<std::size_t>(dst.size()), 0.0);
  out.dst_frac.assign(static_cast<std::size_t>(dst.size()), 0.0);
  std::vector<Polygon> pieces;
  Polygon piece, scratch;
  std::vector<i64> col;
  std::vector<double> part;
  for (i64 k = 0; k < dst.size(); ++k) {
    const auto u = static_cast<std::size_t>(k);
    const Polygon& cell = dst_cell[u];
    const double area = sphere::signed_area(cell);
    out.dst_area[u] = area;
    std::vector<i64>& c = cand[u];
    if (!dst.valid(k) || c.empty() || area <= 0) continue;
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    pieces_of(cell, dst_lat, pieces);
    col.clear();
    part.clear();
    double covered = 0.0;
    for (i64 g : c) {
      const auto at = static_cast<std::size_t>(s.position(g));
      double a = 0.0;
      for (const Polygon& t : pieces) {
        sphere::clip(s.cell[at], t, piece, scratch);
        if (piece.size() > 0) a += sphere::signed_area(piece);
      }
      if (a <= kTouching * area || !s.valid[at]) continue;
      col.push_back(g);
      part.push_back(a);
      covered += a;
    }
    out.dst_frac[u] = covered / area;
    const double norm = options.normalization == ConservNormalization::fracarea   ? covered
                        : options.normalization == ConservNormalization::destarea ? area
                                                                                  : 1.0;
    const i64 row = dst.global_index(k);
    for (std::size_t i = 0; i < col.size(); ++i) out.links.add(row, col[i], part[i] / norm);
  }
  return out;
}

}  // namespace estuary
