// Runoff mapping (OASIS3-MCT 5's LOCCUNIF/LOCCDIST/LOCCGAUS, YAC's SPMAP): see estuary/runoff.hpp.
#include "estuary/runoff.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "kdtree.hpp"
#include "route.hpp"
#include "search.hpp"
#include "sphere.hpp"

namespace estuary {

using i64 = std::int64_t;

const char* name_of(RunoffWeighting w) {
  switch (w) {
    case RunoffWeighting::uniform: return "uniform";
    case RunoffWeighting::distance: return "distance";
    case RunoffWeighting::gaussian: return "gaussian";
  }
  return "?";
}

const char* name_of(RunoffScaling s) {
  switch (s) {
    case RunoffScaling::fracarea: return "fracarea";
    case RunoffScaling::srcarea: return "srcarea";
    case RunoffScaling::invtgtarea: return "invtgtarea";
    case RunoffScaling::none: return "none";
  }
  return "?";
}

namespace {

using detail::KdTree;
using detail::sq_dist;
using sphere::Vec3;

constexpr double kDeg = 3.14159265358979323846 / 180.0;

// The cell areas of this rank's points (from the corners when not given); empty when not needed.
std::vector<double> local_areas(const Grid& g, bool with_area, const char* side) {
  if (!with_area) return {};
  if (!g.area.empty()) return g.area;
  if (g.size() == 0) return {};
  if (g.ncorner < 3)
    throw Error("the " + std::string(side) + " grid has neither cell areas nor corners", "runoff_weights, grid " + g.name,
                "give the areas (def_grid, areas.nc) or the corners, or use the scaling 'none'");
  Grid copy = g;
  copy.compute_areas();
  return std::move(copy.area);
}

// The chord of an angle in degrees, squared (for the k-d tree's radius searches).
double sq_chord(double deg) {
  const double c = 2.0 * std::sin(0.5 * std::min(deg, 180.0) * kDeg);
  return c * c;
}

// OASIS's angular distance (SCRIP): acos of the cosine from sines and cosines, clamped.
double oasis_angle(double sa, double ca, double so, double co, double sb, double cb, double sob, double cob) {
  const double d = sa * sb + ca * cb * (co * cob + so * sob);
  return std::acos(std::max(-1.0, std::min(1.0, d)));
}

// OASIS's test that two points coincide (remap_locc grid_search_nbr): sqrt(2 (1 - |cos|)) <= 1e-7.
bool oasis_same(std::size_t a, std::size_t b, const std::vector<double>& sla, const std::vector<double>& cla,
                const std::vector<double>& slo, const std::vector<double>& clo) {
  double c = sla[a] * sla[b] + cla[a] * cla[b] * (clo[a] * clo[b] + slo[a] * slo[b]);
  c = std::max(-1.0, std::min(1.0, c));
  return !(std::sqrt(2.0 * (1.0 - std::fabs(c))) > 1e-7);
}

// grid_search_nbr of OASIS's remap_locc: the candidates (increasing index) inserted into a list
// of n by distance, a later one only when strictly nearer (ties stay with the smaller index),
// and not when it coincides with the neighbour before its place or the one at it.
template <class Dist>
void oasis_nearest(const std::vector<i64>& cand, std::size_t n, const Dist& dist, const std::vector<double>& sla,
                   const std::vector<double>& cla, const std::vector<double>& slo, const std::vector<double>& clo,
                   std::vector<std::pair<double, i64>>& near) {
  near.clear();
  for (i64 c : cand) {
    const double d = dist(c);
    if (near.size() == n && !(d < near.back().first)) continue;
    std::size_t at = near.size() == n ? n - 1 : near.size();
    while (at > 0 && d < near[at - 1].first) --at;
    const auto u = static_cast<std::size_t>(c);
    if (at > 0 && oasis_same(static_cast<std::size_t>(near[at - 1].second), u, sla, cla, slo, clo)) continue;
    if (at < near.size() && oasis_same(static_cast<std::size_t>(near[at].second), u, sla, cla, slo, clo)) continue;
    if (near.size() == n) near.pop_back();
    near.insert(near.begin() + static_cast<std::ptrdiff_t>(at), {d, c});
  }
}

}  // namespace

Links runoff_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const RunoffOptions& o) {
  const bool spread = o.spread_distance >= 0;
  const bool areas = o.scaling != RunoffScaling::none;
  std::vector<double> src_area, dst_area;
  detail::agree(comm, [&] {
    if (!spread && o.neighbors < 1)
      throw Error("the number of target neighbours must be at least 1, not " + std::to_string(o.neighbors),
                  "runoff_weights");
    if (spread && !(o.spread_distance <= 180.0 && o.max_search_distance >= 0 && o.max_search_distance <= 180.0))
      throw Error("the spread distance " + std::to_string(o.spread_distance) + " and the search distance " +
                      std::to_string(o.max_search_distance) + " must be angles in degrees from 0 to 180",
                  "runoff_weights");
    if (spread && o.weighting == RunoffWeighting::gaussian)
      throw Error("YAC's source point mapping weights 'avg' or 'dist', not Gaussian", "runoff_weights",
                  "use uniform or distance weighting with a spread distance, or the n nearest (LOCCGAUS)");
    if (o.weighting == RunoffWeighting::gaussian && !(o.variance >= 1.1920929e-07))
      throw Error("the Gaussian variance " + std::to_string(o.variance) + " is not positive", "runoff_weights",
                  "give the variance multiplier (OASIS's $VAR), e.g. 1");
    src.check();
    dst.check();
    src_area = local_areas(src, areas, "source");
    dst_area = local_areas(dst, areas, "target");
    // Each rank checks its own points: together they check every point of both grids.
    for (std::size_t u = 0; u < src_area.size(); ++u)
      if (src.valid(static_cast<i64>(u)) && !(src_area[u] > 0))
        throw Error("source cell " + std::to_string(src.global_index(static_cast<i64>(u))) + " has area " +
                        std::to_string(src_area[u]),
                    "runoff_weights", "give positive cell areas");
    for (std::size_t u = 0; u < dst_area.size(); ++u)
      if (dst.valid(static_cast<i64>(u)) && !(dst_area[u] > 0))
        throw Error("target cell " + std::to_string(dst.global_index(static_cast<i64>(u))) + " has area " +
                        std::to_string(dst_area[u]),
                    "runoff_weights", "give positive cell areas");
  });

  // This rank maps its own unmasked source points (a point several ranks hold is mapped by each;
  // the copies' links are the same, and the lowest rank's is kept below). The targets it needs:
  // the unmasked ones that can be among the n nearest of those points (search.hpp), and for a
  // spread every one within the spread distance of the nearest; no rank holds the target grid.
  std::vector<i64> mine;  // local indices, sending
  std::vector<Vec3> queries;
  for (i64 k = 0; k < src.size(); ++k)
    if (src.valid(k)) {
      mine.push_back(k);
      queries.push_back(sphere::unit_vector(src.lon[static_cast<std::size_t>(k)], src.lat[static_cast<std::size_t>(k)]));
    }
  const std::size_t want = spread ? 1 : static_cast<std::size_t>(std::max(1, o.neighbors));
  const double beyond = spread ? std::min(180.0, o.spread_distance) * kDeg * (1 + 1e-9) + 1e-12 : 0.0;
  detail::LocalSource t;
  std::size_t gathered = want;  // the k of the last gather: searches up to it are exact here
  detail::agree(comm, [&] { t = detail::gather_near(dst, queries, gathered, true, comm, "runoff_weights", beyond); });
  i64 any_src = mine.empty() ? 0 : 1;
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any_src, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  const auto n_ocean = static_cast<std::size_t>(t.total_valid);
  detail::agree(comm, [&] {
    if (any_src && n_ocean == 0)
      throw Error("the target grid " + dst.name + " has no unmasked point to receive the runoff", "runoff_weights",
                  "check the target mask (1 for the points that receive)");
    if (any_src && !spread && want > n_ocean)
      throw Error(std::to_string(o.neighbors) + " target neighbours asked for, but the target grid " + dst.name +
                      " has only " + std::to_string(n_ocean) + " unmasked points",
                  "runoff_weights", "ask for at most as many neighbours as there are unmasked target points");
  });

  detail::KeyedItems items;  // key: target; ints: source; reals: the weight as far as the source knows it
  items.ints.resize(1);
  items.reals.resize(1);
  std::vector<i64> cand;
  std::vector<std::pair<double, i64>> near;  // (angle, target position in t)
  std::vector<double> share;
  // Maps the source points `todo` (indices into mine); returns those whose OASIS search needs
  // more targets than the last gather fetched (coinciding targets skipped).
  auto map_points = [&](const std::vector<std::size_t>& todo) {
    const std::size_t nt = t.size();
    std::vector<double> cla(nt), sla(nt), clo(nt), slo(nt);  // OASIS's trigonometry (radians)
    for (std::size_t u = 0; u < nt; ++u) {
      cla[u] = std::cos(t.lat[u] * kDeg), sla[u] = std::sin(t.lat[u] * kDeg);
      clo[u] = std::cos(t.lon[u] * kDeg), slo[u] = std::sin(t.lon[u] * kDeg);
    }
    const KdTree tree = detail::tree_of(t, true);
    std::vector<std::size_t> more;
    for (std::size_t m : todo) {
      const auto su = static_cast<std::size_t>(mine[m]);
      if (tree.empty()) continue;
      const Vec3& q = queries[m];
      const double sa = std::sin(src.lat[su] * kDeg), ca = std::cos(src.lat[su] * kDeg);
      const double so = std::sin(src.lon[su] * kDeg), co = std::cos(src.lon[su] * kDeg);
      auto dist = [&](i64 c) {
        const auto v = static_cast<std::size_t>(c);
        return oasis_angle(sa, ca, so, co, sla[v], cla[v], slo[v], clo[v]);
      };
      // OASIS's grid_search_nbr over the candidates within the k-th nearest chord (with slack;
      // the angle grows with the chord), in increasing index (positions here are in increasing
      // index); more when points that coincide with a kept one (skipped, as OASIS does) leave
      // places empty — exact only up to the k gathered, beyond it the point waits for more.
      bool found = false;
      for (std::size_t k = want; k <= gathered; k = std::min(2 * k, n_ocean)) {
        const double rk = tree.kth_sq_dist(q, k);
        cand.clear();
        tree.within(q, rk * (1 + 1e-9) + 1e-20, cand);
        std::sort(cand.begin(), cand.end());
        oasis_nearest(cand, want, dist, sla, cla, slo, clo, near);
        if (near.size() == want || k == n_ocean) {
          found = true;
          break;
        }
      }
      if (!found) {
        more.push_back(m);
        continue;
      }
      if (spread) {
        if (o.max_search_distance > 0 && near[0].first > o.max_search_distance * kDeg) continue;
        const i64 t0 = near[0].second;
        cand.clear();
        tree.within(t.xyz[static_cast<std::size_t>(t0)], sq_chord(o.spread_distance), cand);
        if (std::find(cand.begin(), cand.end(), t0) == cand.end()) cand.push_back(t0);
        std::sort(cand.begin(), cand.end());
        near.clear();
        for (i64 c : cand) near.emplace_back(dist(c), c);
      }
      share.assign(near.size(), 1.0 / static_cast<double>(near.size()));
      if (!spread && o.weighting != RunoffWeighting::uniform) {
        // remap_locc_wgt: LOCCGAUS turns the distances into exp(d^2 / (2 sigma^2)), sigma^2 = $VAR
        // x the mean angle between the neighbours squared, when there are two neighbours or more
        // and all are nearer than 0.01 rad (else it weights as LOCCDIST); then
        // w_i = 1 / (d_i sum_j 1 / (d_j + eps)).
        if (o.weighting == RunoffWeighting::gaussian && near.size() > 1) {
          double mean = 0, dmax = 0;
          int pairs = 0;
          for (std::size_t i = 0; i + 1 < near.size(); ++i)
            for (std::size_t j = i + 1; j < near.size(); ++j) {
              const auto a = static_cast<std::size_t>(near[i].second), b = static_cast<std::size_t>(near[j].second);
              mean += oasis_angle(sla[b], cla[b], slo[b], clo[b], sla[a], cla[a], slo[a], clo[a]);
              ++pairs;
            }
          for (const auto& nd : near) dmax = std::max(dmax, nd.first * nd.first);
          if (dmax < 1e-4) {
            const double var = o.variance * (mean / pairs) * (mean / pairs);
            for (auto& nd : near) nd.first = std::exp(0.5 * nd.first * nd.first / var);
          }
        }
        // (OASIS adds eps in the sum only, so its shares sum to 1 within eps / d: at d = 1e-3 rad the
        // total would drift by 2e-13. estuary normalises exactly, reading a d below eps as eps.)
        double sum = 0;
        for (std::size_t i = 0; i < near.size(); ++i) sum += share[i] = 1.0 / std::max(near[i].first, DBL_EPSILON);
        for (double& x : share) x /= sum;
      } else if (spread && o.weighting == RunoffWeighting::distance) {
        // YAC's inverse distance, normalised (a zero distance read as 1e-14).
        double total = 0;
        for (std::size_t i = 0; i < near.size(); ++i) total += share[i] = 1.0 / std::max(near[i].first, 1e-14);
        for (double& x : share) x /= total;
      }
      const i64 sg = src.global_index(static_cast<i64>(su));
      for (std::size_t i = 0; i < near.size(); ++i) {
        // fracarea is share x A_s / A_t, evaluated left to right: the source's factor here, the
        // target's where the target is held (below).
        double w = share[i];
        if (o.scaling == RunoffScaling::fracarea || o.scaling == RunoffScaling::srcarea) w = w * src_area[su];
        items.key.push_back(t.index[static_cast<std::size_t>(near[i].second)]);
        items.ints[0].push_back(sg);
        items.reals[0].push_back(w);
      }
    }
    return more;
  };
  std::vector<std::size_t> todo(mine.size());
  std::iota(todo.begin(), todo.end(), std::size_t{0});
  for (;;) {
    todo = map_points(todo);
    i64 pending = todo.empty() ? 0 : 1;
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &pending, 1, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (!pending || gathered >= n_ocean) break;  // (at n_ocean every search above is exact)
    gathered = std::min(2 * gathered, n_ocean);
    std::vector<Vec3> q2;
    for (std::size_t m : todo) q2.push_back(queries[m]);
    detail::agree(comm, [&] { t = detail::gather_near(dst, q2, gathered, true, comm, "runoff_weights", beyond); });
  }

  // The links to every rank holding their target, in the sources' rank order.
  std::vector<i64> wanted;
  for (i64 k = 0; k < dst.size(); ++k) wanted.push_back(dst.global_index(k));
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<i64> offsets;
  const detail::KeyedItems got = detail::route_by_key(std::move(items), dst.global_size, wanted, comm, offsets);

  // A target's area here (the first local copy's).
  std::vector<std::pair<i64, std::size_t>> local_of;
  for (i64 k = 0; k < dst.size(); ++k) local_of.emplace_back(dst.global_index(k), static_cast<std::size_t>(k));
  std::stable_sort(local_of.begin(), local_of.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Per wanted target, its links by source index, the first copy of a repeated source kept.
  struct L {
    i64 s;
    double w;
  };
  std::vector<std::vector<L>> rows(wanted.size());
  for (std::size_t w = 0; w < wanted.size(); ++w) {
    const auto lo = std::lower_bound(local_of.begin(), local_of.end(), wanted[w],
                                     [](const auto& a, i64 v) { return a.first < v; });
    const double at = areas ? dst_area[lo->second] : 0.0;
    auto& row = rows[w];
    for (i64 i = offsets[w]; i < offsets[w + 1]; ++i) {
      double x = got.reals[0][static_cast<std::size_t>(i)];
      if (o.scaling == RunoffScaling::fracarea) x = x / at;
      else if (o.scaling == RunoffScaling::invtgtarea) x /= at;
      row.push_back({got.ints[0][static_cast<std::size_t>(i)], x});
    }
    std::stable_sort(row.begin(), row.end(), [](const L& a, const L& b) { return a.s < b.s; });
    row.erase(std::unique(row.begin(), row.end(), [](const L& a, const L& b) { return a.s == b.s; }), row.end());
  }
  Links out;
  for (i64 k = 0; k < dst.size(); ++k) {
    const i64 g = dst.global_index(k);
    const std::size_t w = static_cast<std::size_t>(std::lower_bound(wanted.begin(), wanted.end(), g) - wanted.begin());
    for (const L& l : rows[w]) out.add(g, l.s, l.w);
  }
  return out;
}

}  // namespace estuary
