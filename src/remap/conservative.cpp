// Conservative weights in parallel: cells as spherical polygons (sphere.hpp), a distributed
// search by bounding caps, the source cells each rank needs fetched with the plan engine, and
// exact intersection areas. See weightgen.hpp for the method and its normalisations.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "estuary/weightgen.hpp"
#include "kdtree.hpp"
#include "search.hpp"
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

template <>
ConservNormalization from_name<ConservNormalization>(std::string_view name) {
  static constexpr ConservNormalization all[] = {ConservNormalization::fracarea, ConservNormalization::destarea,
                                                 ConservNormalization::none};
  return detail::enum_named(name, all, "normalization");
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
  if (g.size() == 0) {
    ok = 1;  // no say
  } else if (allowed) {
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
  return r >= M_PI || sphere::dot(a.centre, b.centre) >= std::cos(r);
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
  std::vector<Vec3> centroid;   // second order only
  i64 position(i64 g) const {
    return std::lower_bound(index.begin(), index.end(), g) - index.begin();
  }
};

// The source cells in `need` (sorted, unique), fetched from the ranks that hold them.
SourceCells fetch_sources(const Grid& src, int ncorner, std::vector<i64> need, bool lat, MPI_Comm comm) {
  Redist move = detail::fetch_plan(src, need, comm);
  const std::size_t ns = static_cast<std::size_t>(src.size()), nn = need.size(), nc = static_cast<std::size_t>(ncorner);
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

// Second order: the gradient of the source field in cell s as a linear function of the values
// of its neighbours, g_s = sum_n G_n (f_n - f_s): least squares over the unmasked edge
// neighbours' centroids in the tangent plane at s's centroid. Fewer than two neighbours, or
// neighbours in a line, give no gradient (first order in that cell).
struct Gradient {
  std::vector<i64> neighbour;
  std::vector<Vec3> coeff;
};

class Gradients {
 public:
  Gradients(const SourceCells& s, i64 nx, i64 ny) : s_(s), nx_(nx), ny_(ny), done_(s.index.size(), 0), g_(s.index.size()) {
    // The grid wraps in i when the first and last cells of a row share an edge (two corners).
    const i64 a = s.position(0), b = s.position(nx - 1);
    int shared = 0;
    if (nx > 2)
      for (const Vec3& u : s.cell[static_cast<std::size_t>(a)].v)
        for (const Vec3& w : s.cell[static_cast<std::size_t>(b)].v) shared += sphere::norm(u - w) < 1e-12 ? 1 : 0;
    cyclic_ = shared >= 2;
  }

  // The neighbours of g whose cells the gradient uses (whether fetched or not).
  static void neighbours(i64 g, i64 nx, i64 ny, bool wrap, std::vector<i64>& out) {
    const i64 i = g % nx, j = g / nx;
    if (i > 0 || wrap) out.push_back(j * nx + (i + nx - 1) % nx);
    if (i < nx - 1 || wrap) out.push_back(j * nx + (i + 1) % nx);
    if (j > 0) out.push_back(g - nx);
    if (j < ny - 1) out.push_back(g + nx);
  }

  const Gradient& at(std::size_t pos) {
    if (done_[pos]) return g_[pos];
    done_[pos] = 1;
    Gradient& out = g_[pos];
    const Vec3 c = s_.centroid[pos];
    // East and north at c (any orthonormal pair at a pole).
    Vec3 e1 = sphere::cross(Vec3{0, 0, 1}, c);
    if (sphere::norm(e1) < 1e-12) e1 = {1, 0, 0};
    e1 = sphere::normalized(e1);
    const Vec3 e2 = sphere::cross(c, e1);
    std::vector<i64> nb;
    neighbours(s_.index[pos], nx_, ny_, cyclic_, nb);
    std::vector<std::pair<double, double>> d;
    std::vector<i64> used;
    for (i64 n : nb) {
      const auto q = static_cast<std::size_t>(s_.position(n));
      if (q >= s_.index.size() || s_.index[q] != n || !s_.valid[q] || s_.cell[q].size() == 0) continue;
      const Vec3 r = s_.centroid[q] - c;
      d.emplace_back(sphere::dot(r, e1), sphere::dot(r, e2));
      used.push_back(n);
    }
    double m11 = 0, m12 = 0, m22 = 0;
    for (const auto& [x, y] : d) m11 += x * x, m12 += x * y, m22 += y * y;
    const double det = m11 * m22 - m12 * m12;
    if (d.size() < 2 || det <= 1e-12 * (m11 * m22 + 1e-300)) return out;
    for (std::size_t k = 0; k < d.size(); ++k) {
      const auto [x, y] = d[k];
      const double gx = (m22 * x - m12 * y) / det, gy = (m11 * y - m12 * x) / det;
      out.neighbour.push_back(used[k]);
      out.coeff.push_back(gx * e1 + gy * e2);
    }
    return out;
  }

  bool cyclic() const { return cyclic_; }

 private:
  const SourceCells& s_;
  i64 nx_, ny_;
  bool cyclic_ = false;
  std::vector<char> done_;
  std::vector<Gradient> g_;
};

// Whether every corner lies left of (or on) every great-circle edge.
bool convex(const Polygon& cell) {
  const std::size_t n = cell.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 w = sphere::cross(cell.v[i], cell.v[(i + 1) % n]);
    for (std::size_t j = 0; j < n; ++j)
      if (sphere::dot(w, cell.v[j]) < -1e-15) return false;
  }
  return true;
}

// The pieces a destination cell is clipped against: the cell itself when it is convex (a
// lon-lat box, a triangle, most quadrilaterals), else the fan of triangles from its centre (as
// CDO does for every great-circle cell, so that concave cells are right).
void pieces_of(const Polygon& cell, bool lat, std::vector<Polygon>& out) {
  out.clear();
  if (cell.size() == 0) return;
  if (lat || cell.size() == 3 || convex(cell)) {
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
  // Ranks that hold no cells of a grid may not know its corners or shape: take them from those
  // that do.
  i64 shape[4] = {0, 0, 0, 0};  // source nx, ny, corners; destination corners
  detail::agree(comm, [&] {
    if (options.order != 1 && options.order != 2)
      throw Error("order must be 1 or 2, not " + std::to_string(options.order), kWhere);
    src.check();
    dst.check();
    if (src.size() > 0 && src.dims.size() == 2) shape[0] = src.dims[0], shape[1] = src.dims[1];
    if (src.size() > 0) shape[2] = src.ncorner;
    if (dst.size() > 0) shape[3] = dst.ncorner;
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, shape, 4, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (shape[2] < 3) throw Error("the source grid " + src.name + " has no cell corners", kWhere, "give def_grid the corners");
    if (shape[3] < 3) throw Error("the destination grid " + dst.name + " has no cell corners", kWhere, "give def_grid the corners");
    if ((src.size() > 0 && src.ncorner != shape[2]) || (dst.size() > 0 && dst.ncorner != shape[3]))
      throw Error("the ranks disagree on the number of cell corners", kWhere);
    i64 sizes[2] = {src.global_size, -src.global_size};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (sizes[0] != -sizes[1]) throw Error("the ranks disagree on the source grid's size", kWhere);
    if (options.order == 2 && shape[0] * shape[1] != src.global_size)
      throw Error("second order needs a logically rectangular source grid (dims nx, ny); " + src.name + " is " +
                      name_of(src.kind),
                  kWhere);
    for (i64 k = 0; k < src.size(); ++k)
      if (src.global_index(k) < 0 || src.global_index(k) >= src.global_size)
        throw Error("source point index " + std::to_string(src.global_index(k)) + " outside the grid of " +
                        std::to_string(src.global_size) + " points",
                    kWhere);
  });
  const bool src_lat = latitude_edges(src, options.latitude_edges, comm);
  const bool dst_lat = latitude_edges(dst, options.latitude_edges, comm);

  // 1. Caps of the cells this rank holds, dealt to the bin owners, which pair them.
  ConservativeWeights out;
  double t0 = MPI_Wtime();
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

  out.search_seconds = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  // 2. Candidates per destination cell. The cells with work are dealt out so that every rank
  //    clips about as many (destination, source) pairs: a block of a destination grid is far
  //    from even (small ocean cells crowd near the poles). Each goes with its corners and its
  //    candidates, in rank order, to the rank whose share of the global pair count it falls in.
  const std::size_t nd = static_cast<std::size_t>(dst.size()), nc = static_cast<std::size_t>(shape[3]);
  std::vector<std::vector<i64>> cand(nd);
  for (std::size_t m = 0; m + 1 < pairs.size(); m += 2) cand[static_cast<std::size_t>(pairs[m])].push_back(pairs[m + 1]);
  out.dst_area.assign(nd, 0.0);
  out.dst_frac.assign(nd, 0.0);
  std::vector<i64> busy;  // local cells with work
  double mine = 0, before = 0, total = 0;
  for (std::size_t u = 0; u < nd; ++u) {
    const double area = sphere::signed_area(dst_cell[u]);
    out.dst_area[u] = area;
    std::vector<i64>& c = cand[u];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    if (!dst.valid(static_cast<i64>(u)) || c.empty() || area <= 0) continue;
    busy.push_back(static_cast<i64>(u));
    mine += static_cast<double>(c.size() + 1);
  }
  detail::check_mpi(MPI_Exscan(&mine, &before, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Exscan");
  if (me == 0) before = 0;
  detail::check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  std::vector<std::vector<i64>> deal(static_cast<std::size_t>(p));
  double at = before;
  for (i64 k : busy) {
    const auto u = static_cast<std::size_t>(k);
    const double w = static_cast<double>(cand[u].size() + 1);
    const int to = std::min(p - 1, static_cast<int>((at + w / 2) * p / total));
    at += w;
    std::vector<i64>& m = deal[static_cast<std::size_t>(to)];
    m.push_back(k);
    m.push_back(dst.global_index(k));
    m.push_back(static_cast<i64>(cand[u].size()));
    m.insert(m.end(), cand[u].begin(), cand[u].end());
    for (std::size_t c = 0; c < nc; ++c) m.push_back(std::bit_cast<i64>(dst.corner_lon[u * nc + c]));
    for (std::size_t c = 0; c < nc; ++c) m.push_back(std::bit_cast<i64>(dst.corner_lat[u * nc + c]));
  }
  std::vector<i64> item_counts;
  const std::vector<i64> items = detail::alltoallv(comm, deal, item_counts);
  deal.clear();

  // The cells dealt here, and the source cells they name.
  struct Item {
    int from = 0;
    i64 k = 0, row = 0;
    std::vector<i64> cand;
    Polygon cell;
  };
  std::vector<Item> work;
  std::vector<i64> need;
  {
    std::size_t at_msg = 0;
    std::vector<double> lo(nc), la(nc);
    for (int r = 0; r < p; ++r)
      for (const std::size_t end_msg = at_msg + static_cast<std::size_t>(item_counts[static_cast<std::size_t>(r)]); at_msg < end_msg;) {
        Item it;
        it.from = r;
        it.k = items[at_msg++];
        it.row = items[at_msg++];
        const auto n = static_cast<std::size_t>(items[at_msg++]);
        it.cand.assign(items.begin() + static_cast<std::ptrdiff_t>(at_msg), items.begin() + static_cast<std::ptrdiff_t>(at_msg + n));
        at_msg += n;
        for (std::size_t c = 0; c < nc; ++c) lo[c] = std::bit_cast<double>(items[at_msg++]);
        for (std::size_t c = 0; c < nc; ++c) la[c] = std::bit_cast<double>(items[at_msg++]);
        it.cell = sphere::cell_polygon(lo.data(), la.data(), static_cast<int>(nc), dst_lat);
        need.insert(need.end(), it.cand.begin(), it.cand.end());
        work.push_back(std::move(it));
      }
  }
  const bool second = options.order == 2;
  const i64 nx = second ? shape[0] : 1, ny = second ? shape[1] : 1;
  if (second) {  // and the neighbours their gradients use, and the two ends of row 0 (wrap test)
    std::sort(need.begin(), need.end());
    need.erase(std::unique(need.begin(), need.end()), need.end());
    const std::size_t n = need.size();
    for (std::size_t k = 0; k < n; ++k) Gradients::neighbours(need[k], nx, ny, true, need);
    need.push_back(0);
    need.push_back(nx - 1);
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  SourceCells s = fetch_sources(src, static_cast<int>(shape[2]), std::move(need), src_lat, comm);
  if (second) {
    s.centroid.resize(s.index.size());
    for (std::size_t k = 0; k < s.index.size(); ++k) s.centroid[k] = sphere::normalized(sphere::moment(s.cell[k]));
  }
  std::optional<Gradients> grad;
  if (second) grad.emplace(s, nx, ny);

  out.fetch_seconds = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  // 3. Each destination cell alone: intersections in increasing source index. The results go
  //    back to the cell's rank as (local index, covered fraction, links).
  std::vector<std::vector<i64>> back(static_cast<std::size_t>(p));
  std::vector<Polygon> pieces;
  std::vector<sphere::Clipper> clippers;
  Polygon piece;
  std::vector<std::pair<i64, double>> acc;  // (source, weight before normalising)
  for (const Item& it : work) {
    const Polygon& cell = it.cell;
    const double area = sphere::signed_area(cell);
    pieces_of(cell, dst_lat, pieces);
    clippers.clear();
    for (const Polygon& t : pieces) clippers.emplace_back(t);
    out.pairs += static_cast<i64>(it.cand.size());
    acc.clear();
    double covered = 0.0;
    for (i64 g : it.cand) {
      const auto pos = static_cast<std::size_t>(s.position(g));
      double a = 0.0;
      Vec3 m{};
      for (const sphere::Clipper& t : clippers) {
        t.clip(s.cell[pos], piece);
        if (piece.size() == 0) continue;
        a += sphere::signed_area(piece);
        if (second) m = m + sphere::moment(piece);
      }
      if (a <= kTouching * area || !s.valid[pos]) continue;
      covered += a;
      acc.emplace_back(g, a);
      if (!second) continue;
      // f_s A + g_s . (M - A c_s), with g_s = sum_n G_n (f_n - f_s).
      const Gradient& gr = grad->at(pos);
      const Vec3 v = m - a * s.centroid[pos];
      for (std::size_t n = 0; n < gr.neighbour.size(); ++n) {
        const double t = sphere::dot(gr.coeff[n], v);
        acc.emplace_back(gr.neighbour[n], t);
        acc.emplace_back(g, -t);
      }
    }
    const double norm = options.normalization == ConservNormalization::fracarea   ? covered
                        : options.normalization == ConservNormalization::destarea ? area
                                                                                  : 1.0;
    // One link per source, in increasing source index; contributions added in the order made,
    // which depends only on this cell and its candidates.
    std::stable_sort(acc.begin(), acc.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<i64>& m = back[static_cast<std::size_t>(it.from)];
    m.push_back(it.k);
    m.push_back(std::bit_cast<i64>(covered / area));
    const std::size_t count_at = m.size();
    m.push_back(0);
    for (std::size_t i = 0; i < acc.size();) {
      double w = 0;
      std::size_t j = i;
      for (; j < acc.size() && acc[j].first == acc[i].first; ++j) w += acc[j].second;
      if (w != 0.0) {
        m.push_back(acc[i].first);
        m.push_back(std::bit_cast<i64>(w / norm));
        ++m[count_at];
      }
      i = j;
    }
  }
  out.intersect_seconds = MPI_Wtime() - t0;
  work.clear();
  const std::vector<i64> results = detail::alltoallv(comm, back, counts);
  std::vector<std::size_t> result_at(nd, SIZE_MAX);
  for (std::size_t m = 0; m < results.size(); m += 3 + 2 * static_cast<std::size_t>(results[m + 2])) {
    const auto u = static_cast<std::size_t>(results[m]);
    result_at[u] = m;
    out.dst_frac[u] = std::bit_cast<double>(results[m + 1]);
  }
  for (std::size_t u = 0; u < nd; ++u) {
    if (result_at[u] == SIZE_MAX) continue;
    const std::size_t m = result_at[u];
    const i64 row = dst.global_index(static_cast<i64>(u));
    for (i64 l = 0; l < results[m + 2]; ++l)
      out.links.add(row, results[m + 3 + 2 * static_cast<std::size_t>(l)],
                    std::bit_cast<double>(results[m + 4 + 2 * static_cast<std::size_t>(l)]));
  }
  if (options.nearest_for_uncovered) {
    // The valid destination cells left without links, and their nearest unmasked source cell.
    std::vector<char> linked(static_cast<std::size_t>(dst.size()), 0);
    std::map<i64, std::vector<i64>> where;  // global index -> local positions
    for (i64 k = 0; k < dst.size(); ++k) where[dst.global_index(k)].push_back(k);
    for (i64 row : out.links.row)
      for (i64 k : where[row]) linked[static_cast<std::size_t>(k)] = 1;
    Grid lone;
    lone.kind = dst.kind;
    lone.name = dst.name;
    lone.dims = dst.dims;
    lone.global_size = dst.global_size;
    for (i64 k = 0; k < dst.size(); ++k) {
      const auto u = static_cast<std::size_t>(k);
      if (linked[u] || !dst.valid(k)) continue;
      lone.points.push_back(dst.global_index(k));
      lone.lon.push_back(dst.lon[u]);
      lone.lat.push_back(dst.lat[u]);
    }
    DistanceWeightOptions nn;
    nn.neighbors = 1;
    nn.mask_rule = SourceMaskRule::nearest_unmasked;
    const Links near = distance_weights(src, lone, comm, nn);
    for (i64 k = 0; k < near.size(); ++k)
      out.links.add(near.row[static_cast<std::size_t>(k)], near.col[static_cast<std::size_t>(k)], 1.0);
  }
  return out;
}

}  // namespace estuary
