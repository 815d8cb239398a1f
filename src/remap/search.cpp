// The distributed source search (see search.hpp).
#include "remap/search.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <string>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/redist.hpp"
#include "remap/pointsearch.hpp"

namespace estuary::detail {

using i64 = std::int64_t;
using sphere::Vec3;

namespace {

constexpr double kDeg = M_PI / 180.0;

// The fixed lon-lat bins: nlat rows of nlon columns, about 64 source points a bin. Row and
// column come from the unit vector (not from the grid's own lon/lat, which may lie outside
// [-90, 90] or be unnormalised), so a point is always inside its bin's cap up to rounding.
struct Bins {
  int nlat = 2, nlon = 4;
  std::vector<Vec3> centre;
  std::vector<double> radius;  // angular, rounding slack included
  double max_radius = 0;
  std::vector<double> zedge, cedge, sedge;  // sin of the rows' edges; cos, sin of the columns' edges

  explicit Bins(i64 n) {
    nlat = std::clamp(static_cast<int>(std::lround(std::sqrt(static_cast<double>(n) / 128.0))), 2, 512);
    nlon = 2 * nlat;
    centre.resize(size());
    radius.resize(size());
    for (int j = 0; j < nlat; ++j)
      for (int i = 0; i < nlon; ++i) {
        const double la0 = -90.0 + 180.0 * j / nlat, la1 = -90.0 + 180.0 * (j + 1) / nlat;
        const double lo0 = 360.0 * i / nlon - 180.0, lo1 = 360.0 * (i + 1) / nlon - 180.0;
        const Vec3 c = sphere::unit_vector(0.5 * (lo0 + lo1), 0.5 * (la0 + la1));
        // A box no wider than 180 degrees is farthest from its centre at a corner.
        double r = 0;
        for (double la : {la0, la1})
          for (double lo : {lo0, lo1}) r = std::max(r, sphere::angle(c, sphere::unit_vector(lo, la)));
        const std::size_t b = static_cast<std::size_t>(j * nlon + i);
        centre[b] = c;
        radius[b] = r + 1e-9;
        max_radius = std::max(max_radius, radius[b]);
      }
    for (int j = 0; j <= nlat; ++j) zedge.push_back(std::sin((-90.0 + 180.0 * j / nlat) * kDeg));
    for (int i = 0; i <= nlon; ++i) {
      cedge.push_back(std::cos((360.0 * i / nlon - 180.0) * kDeg));
      sedge.push_back(std::sin((360.0 * i / nlon - 180.0) * kDeg));
    }
  }
  // Whether v lies in bin b's box (up to rounding, which the radius' slack absorbs): its
  // latitude band by z, its longitude wedge (under 180 degrees) by two cross products. No
  // trigonometry: the queries, in order, mostly fall in the bin of the one before.
  bool holds(int b, const Vec3& v) const {
    const int j = b / nlon, i = b % nlon;
    const auto J = static_cast<std::size_t>(j), I = static_cast<std::size_t>(i);
    return v.z >= zedge[J] && v.z <= zedge[J + 1] && cedge[I] * v.y - sedge[I] * v.x >= 0 &&
           cedge[I + 1] * v.y - sedge[I + 1] * v.x <= 0;
  }
  std::size_t size() const { return static_cast<std::size_t>(nlat) * static_cast<std::size_t>(nlon); }
  int row(double lat_rad) const {
    return std::clamp(static_cast<int>(std::floor((lat_rad + M_PI / 2) / M_PI * nlat)), 0, nlat - 1);
  }
  int col(double lon_rad) const {  // lon in [-pi, pi]
    return std::clamp(static_cast<int>(std::floor((lon_rad + M_PI) / (2 * M_PI) * nlon)), 0, nlon - 1);
  }
  int of(const Vec3& v) const {
    return row(std::asin(std::clamp(v.z, -1.0, 1.0))) * nlon + col(std::atan2(v.y, v.x));
  }
  // The same from degrees, without the trigonometry, when the latitude is in range (the unit
  // vector then lies in the box up to rounding, well inside the radius' slack).
  int of(double lon_deg, double lat_deg) const {
    if (!(lat_deg >= -90.0 && lat_deg <= 90.0 && std::isfinite(lon_deg)))
      return of(sphere::unit_vector(lon_deg, lat_deg));
    const double lon = lon_deg - 360.0 * std::floor((lon_deg + 180.0) / 360.0);  // [-180, 180)
    return row(lat_deg * kDeg) * nlon + col(lon * kDeg);
  }
  // Calls f(b) for each bin whose cap meets the cap (c, r): rows by latitude, columns by the
  // longitudes the cap spans (all of them when it reaches a pole), then the exact cap test.
  template <class F>
  void meeting(const Vec3& c, double r, F&& f) const {
    const double reach = r + max_radius;
    const double lat = std::asin(std::clamp(c.z, -1.0, 1.0)), lon = std::atan2(c.y, c.x);
    const int j0 = row(lat - reach), j1 = row(lat + reach);
    int i0 = 0, i1 = nlon - 1;
    if (lat + reach < M_PI / 2 && lat - reach > -M_PI / 2 && std::sin(reach) < std::cos(lat)) {
      const double dl = std::asin(std::sin(reach) / std::cos(lat));
      i0 = static_cast<int>(std::floor((lon - dl + M_PI) / (2 * M_PI) * nlon)) - 1;
      i1 = static_cast<int>(std::floor((lon + dl + M_PI) / (2 * M_PI) * nlon)) + 1;
      if (i1 - i0 >= nlon) i0 = 0, i1 = nlon - 1;
    }
    for (int j = j0; j <= j1; ++j)
      for (int i = i0; i <= i1; ++i) {
        const std::size_t b = static_cast<std::size_t>(j * nlon + ((i % nlon) + nlon) % nlon);
        const double sum = r + radius[b];
        if (sum >= M_PI || sphere::dot(c, centre[b]) >= std::cos(sum)) f(b);
      }
  }
};

}  // namespace

void LocalSource::reindex(i64 row_length, i64 rows) {
  order.resize(size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Usually one sorted run (as gathered) and one appended by fetch_by_index (sorted too): a
  // merge, not a sort of the whole.
  const auto by_index = [&](std::size_t a, std::size_t b) { return index[a] < index[b]; };
  const auto split = std::is_sorted_until(index.begin(), index.end());
  if (split != index.end()) {
    const auto mid = order.begin() + (split - index.begin());
    if (std::is_sorted(split, index.end())) std::inplace_merge(order.begin(), mid, order.end(), by_index);
    else std::sort(order.begin(), order.end(), by_index);
  }
  sorted.resize(size());
  for (std::size_t k = 0; k < size(); ++k) sorted[k] = index[order[k]];
  nx = row_length;
  row_start.clear();
  if (rows <= 0 || row_length <= 0) return;
  row_start.resize(static_cast<std::size_t>(rows) + 1);
  for (i64 j = 0; j <= rows; ++j)
    row_start[static_cast<std::size_t>(j)] =
        static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), j * row_length) - sorted.begin());
}

LocalSource gather_near(const Grid& src, const std::vector<Vec3>& queries, std::size_t k, bool unmasked_only,
                        MPI_Comm comm, const char* where, double beyond) {
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  const i64 ng = src.global_size;
  // Every rank checks its own points first, before any collective below can leave a rank behind.
  agree(comm, [&] {
    for (i64 k2 = 0; k2 < src.size(); ++k2) {
      const i64 g = src.global_index(k2);
      if (g < 0 || g >= ng)
        throw Error("source point index " + std::to_string(g) + " outside the grid of " + std::to_string(ng) + " points",
                    where);
    }
  });
  const Bins bins(ng);
  const std::size_t nb = bins.size();

  // 1. Each source point to the owner of its bin (with the bin, so that no one computes it twice),
  //    written straight into one send buffer at its owner's offset (sizes counted first: no
  //    growing per-rank vectors, no copy into a flat buffer).
  const auto ns = static_cast<std::size_t>(src.size());
  std::vector<int> bin_of(ns);
  std::vector<i64> send_counts(static_cast<std::size_t>(p), 0), counts;
  for (std::size_t u = 0; u < ns; ++u) {
    bin_of[u] = bins.of(src.lon[u], src.lat[u]);
    send_counts[static_cast<std::size_t>(bin_of[u] % p)] += 4;
  }
  std::vector<i64> send(4 * ns), at_rank(static_cast<std::size_t>(p), 0);
  for (std::size_t r = 1; r < at_rank.size(); ++r) at_rank[r] = at_rank[r - 1] + send_counts[r - 1];
  for (std::size_t u = 0; u < ns; ++u) {
    i64* m = send.data() + at_rank[static_cast<std::size_t>(bin_of[u] % p)];
    at_rank[static_cast<std::size_t>(bin_of[u] % p)] += 4;
    const auto k2 = static_cast<i64>(u);
    m[0] = 2 * src.global_index(k2) + (src.valid(k2) ? 1 : 0);
    m[1] = std::bit_cast<i64>(src.lon[u]);
    m[2] = std::bit_cast<i64>(src.lat[u]);
    m[3] = bin_of[u];
  }
  bin_of = {};
  std::vector<i64> got = alltoallv(comm, send, send_counts, counts);
  send = {};
  // Grouped by bin (a counting sort, arrival order kept), then once each in a bin in increasing
  // index: the lowest rank's copy of a repeat (arrivals come in rank order; the sort is stable).
  struct Held {
    i64 key;
    double lon, lat;
  };
  const std::size_t arrived = got.size() / 4;
  std::vector<std::size_t> first(nb + 1, 0);  // held[first[b] .. first[b + 1]): bin b's points here
  for (std::size_t m = 0; m < arrived; ++m) ++first[static_cast<std::size_t>(got[4 * m + 3]) + 1];
  for (std::size_t b = 0; b < nb; ++b) first[b + 1] += first[b];
  std::vector<Held> held(arrived);
  {
    std::vector<std::size_t> fill(first.begin(), first.end() - 1);
    for (std::size_t m = 0; m < arrived; ++m)
      held[fill[static_cast<std::size_t>(got[4 * m + 3])]++] = {got[4 * m], std::bit_cast<double>(got[4 * m + 1]),
                                                                std::bit_cast<double>(got[4 * m + 2])};
  }
  got = {};
  auto by_index = [](const Held& x, const Held& y) { return x.key / 2 < y.key / 2; };
  std::size_t kept = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto lo = held.begin() + static_cast<std::ptrdiff_t>(first[b]), hi = held.begin() + static_cast<std::ptrdiff_t>(first[b + 1]);
    if (!std::is_sorted(lo, hi, by_index)) std::stable_sort(lo, hi, by_index);
    first[b] = kept;
    for (auto it = lo; it != hi; ++it)
      if (it == lo || (it - 1)->key / 2 != it->key / 2) held[kept++] = *it;
  }
  first[nb] = kept;
  held.resize(kept);
  // Points (all, unmasked) per bin, on every rank.
  std::vector<i64> hist(2 * nb, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    hist[b] = static_cast<i64>(first[b + 1] - first[b]);
    for (std::size_t h = first[b]; h < first[b + 1]; ++h) hist[nb + b] += held[h].key & 1;
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, hist.data(), static_cast<int>(hist.size()), MPI_INT64_T, MPI_SUM, comm),
            "MPI_Allreduce");
  LocalSource s;
  s.total = std::accumulate(hist.begin(), hist.begin() + static_cast<std::ptrdiff_t>(nb), i64{0});
  s.total_valid = std::accumulate(hist.begin() + static_cast<std::ptrdiff_t>(nb), hist.end(), i64{0});
  if (s.total != ng)
    throw Error(std::to_string(ng - s.total) + " of the " + std::to_string(ng) + " source points are held by no rank",
                where, "pass each rank's share of the source grid so that together they cover it");
  const i64* count = unmasked_only ? hist.data() + nb : hist.data();

  // 2. The bins this rank needs: for each bin holding queries, a block of bins around it that
  //    holds k counted points bounds the k-th nearest of its queries (a query is within the
  //    bin's radius of its centre, a point within its own bin's radius of that centre).
  std::vector<char> has_query(nb, 0), need(nb, 0);
  int last = -1;
  for (const Vec3& q : queries) {
    if (last >= 0 && bins.holds(last, q)) continue;
    last = bins.of(q);
    has_query[static_cast<std::size_t>(last)] = 1;
  }
  for (std::size_t b = 0; b < nb; ++b) {
    if (!has_query[b] || k == 0) continue;
    const int jb = static_cast<int>(b) / bins.nlon, ib = static_cast<int>(b) % bins.nlon;
    double bound = M_PI;  // the whole sphere when the grid holds fewer than k counted points
    for (int r = 0;; ++r) {
      const int j0 = std::max(0, jb - r), j1 = std::min(bins.nlat - 1, jb + r);
      const bool all_cols = 2 * r + 1 >= bins.nlon;
      const int i0 = all_cols ? 0 : ib - r, i1 = all_cols ? bins.nlon - 1 : ib + r;
      i64 n = 0;
      double far = 0;
      for (int j = j0; j <= j1; ++j)
        for (int i = i0; i <= i1; ++i) {
          const std::size_t c = static_cast<std::size_t>(j * bins.nlon + ((i % bins.nlon) + bins.nlon) % bins.nlon);
          if (count[c] == 0) continue;
          n += count[c];
          far = std::max(far, sphere::angle(bins.centre[b], bins.centre[c]) + bins.radius[c]);
        }
      if (n >= static_cast<i64>(k)) {
        bound = std::min(M_PI, far + bins.radius[b]);
        break;
      }
      if (j0 == 0 && j1 == bins.nlat - 1 && all_cols) break;
    }
    // Every point within the bound of any query in b, the bound widened as the searches widen
    // the k-th distance (chord x (1 + 1e-6) + 2e-12 at most), with room to spare.
    const double chord = 2 * std::sin(bound / 2) * (1 + 1e-5) + 1e-9;
    const double reach = chord >= 2 ? M_PI : std::min(M_PI, 2 * std::asin(chord / 2) + std::max(0.0, beyond));
    bins.meeting(bins.centre[b], bins.radius[b] + reach, [&](std::size_t c) { need[c] = 1; });
  }

  // 3. The needed bins from their owners.
  std::vector<std::vector<i64>> ask(static_cast<std::size_t>(p));
  for (std::size_t b = 0; b < nb; ++b)
    if (need[b] && hist[b] > 0) ask[b % static_cast<std::size_t>(p)].push_back(static_cast<i64>(b));
  const std::vector<i64> asked = alltoallv(comm, ask, counts);
  ask.clear();
  // The reply, sized first and written in place, as the deal above.
  std::size_t total = 0;
  for (const i64 b : asked) total += 3 * (first[static_cast<std::size_t>(b) + 1] - first[static_cast<std::size_t>(b)]);
  send.resize(total);
  std::size_t at = 0, put = 0;
  for (int r = 0; r < p; ++r) {
    const std::size_t from = put;
    for (i64 m = 0; m < counts[static_cast<std::size_t>(r)]; ++m, ++at) {
      const auto b = static_cast<std::size_t>(asked[at]);
      for (std::size_t h = first[b]; h < first[b + 1]; ++h, put += 3) {
        send[put] = held[h].key;
        send[put + 1] = std::bit_cast<i64>(held[h].lon);
        send[put + 2] = std::bit_cast<i64>(held[h].lat);
      }
    }
    send_counts[static_cast<std::size_t>(r)] = static_cast<i64>(put - from);
  }
  held = {};
  got = alltoallv(comm, send, send_counts, counts);
  send = {};

  // 4. In increasing global index (bins are disjoint: no repeats): placed by index when the
  //    points are a fair share of the grid (one pass over a table of the grid's size), else sorted.
  const std::size_t n = got.size() / 3;
  std::vector<std::size_t> ord(n);
  constexpr std::uint32_t kNone = UINT32_MAX;
  std::size_t placed = 0;
  if (static_cast<i64>(n) * 8 >= ng && n < kNone) {
    std::vector<std::uint32_t> slot(static_cast<std::size_t>(ng), kNone);
    for (std::size_t m = 0; m < n; ++m) slot[static_cast<std::size_t>(got[3 * m] / 2)] = static_cast<std::uint32_t>(m);
    for (const std::uint32_t m : slot)
      if (m != kNone) ord[placed++] = m;
  }
  // (Fewer placed than received: an index came twice, from copies of a point that ranks hold
  // with different coordinates, hence in two bins; the sort keeps both, as before.)
  if (placed != n) {
    std::vector<std::pair<i64, std::size_t>> by(n);
    for (std::size_t m = 0; m < n; ++m) by[m] = {got[3 * m], m};
    std::sort(by.begin(), by.end());
    for (std::size_t m = 0; m < n; ++m) ord[m] = by[m].second;
  }
  s.index.resize(n);
  s.xyz.resize(n);
  s.lon.resize(n);
  s.lat.resize(n);
  s.valid.resize(n);
  for (std::size_t m = 0; m < n; ++m) {
    const std::size_t o = ord[m];
    s.index[m] = got[3 * o] / 2;
    s.valid[m] = static_cast<char>(got[3 * o] & 1);
    s.lon[m] = std::bit_cast<double>(got[3 * o + 1]);
    s.lat[m] = std::bit_cast<double>(got[3 * o + 2]);
    s.xyz[m] = sphere::unit_vector(s.lon[m], s.lat[m]);
  }
  s.reindex();
  return s;
}

Redist fetch_plan(const Grid& src, const std::vector<i64>& need, MPI_Comm comm) {
  std::vector<i64> held = src.points;
  if (held.empty()) {
    held.resize(static_cast<std::size_t>(src.size()));
    std::iota(held.begin(), held.end(), i64{0});
  }
  RedistOptions ro;
  ro.plan.duplicate = DuplicatePolicy::lowest_rank;
  return Redist(Decomp::indices(src.global_size, held), Decomp::indices(src.global_size, need), comm, ro);
}

void fetch_by_index(const Grid& src, LocalSource& s, std::vector<i64> need, MPI_Comm comm) {
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  need.erase(std::remove_if(need.begin(), need.end(), [&](i64 g) { return s.position(g) < s.size(); }), need.end());
  Redist move = fetch_plan(src, need, comm);
  const std::size_t ns = static_cast<std::size_t>(src.size()), nn = need.size();
  std::vector<double> lon(nn), lat(nn);
  std::vector<std::int32_t> mask_from(ns), mask_to(nn);
  for (std::size_t k = 0; k < ns; ++k) mask_from[k] = src.valid(static_cast<i64>(k)) ? 1 : 0;
  move.run({Field(src.lon, lon), Field(src.lat, lat), Field(mask_from, mask_to)});
  for (std::size_t k = 0; k < nn; ++k) {  // appended: the positions already handed out stay
    s.index.push_back(need[k]);
    s.lon.push_back(lon[k]);
    s.lat.push_back(lat[k]);
    s.valid.push_back(static_cast<char>(mask_to[k] != 0));
    s.xyz.push_back(sphere::unit_vector(lon[k], lat[k]));
  }
  s.reindex(s.nx, static_cast<i64>(s.row_start.empty() ? 0 : s.row_start.size() - 1));
}

std::vector<Vec3> queries_of(const Grid& dst, const std::vector<char>* want) {
  std::vector<Vec3> q;
  q.reserve(static_cast<std::size_t>(dst.size()));
  for (i64 k = 0; k < dst.size(); ++k) {
    const auto u = static_cast<std::size_t>(k);
    if (dst.valid(k) && (!want || (*want)[u])) q.push_back(sphere::unit_vector(dst.lon[u], dst.lat[u]));
  }
  return q;
}

KdTree tree_of(const LocalSource& s, bool unmasked_only) {
  std::vector<i64> subset;
  subset.reserve(s.size());
  for (std::size_t u = 0; u < s.size(); ++u)
    if (!unmasked_only || s.valid[u]) subset.push_back(static_cast<i64>(u));
  return KdTree(s.xyz, subset);
}

void nearest(const KdTree& tree, const LocalSource& s, const Vec3& q, std::size_t nn, std::vector<i64>& cand,
             std::vector<i64>& addr, std::vector<double>& dist) {
  // Everything that may be among the nn nearest under CDO's tolerant order.
  // (float rounding of the squared distance moves it by at most 2^-24 relative.)
  cand.clear();
  tree.near_candidates(q, nn, 1e-6, 2 * kCmpTol, cand);
  auto global = [&](i64 c) { return c == INT64_MAX ? INT64_MAX : s.index[static_cast<std::size_t>(c)]; };
  if (cand.size() > 1) std::sort(cand.begin(), cand.end(), [&](i64 a, i64 b) { return global(a) < global(b); });
  addr.assign(nn, INT64_MAX);
  dist.assign(nn, DBL_MAX);
  for (i64 c : cand)  // in increasing global index
    store_nearest(c, cdo_distance(sq_dist(q, s.xyz[static_cast<std::size_t>(c)])), global, addr, dist);
}

}  // namespace estuary::detail
