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

// One grid gathered on every rank, by global index; `holders` lists, per point, the ranks that
// hold it (CSR: holders[first[g] .. first[g+1])), so that links can be sent where they are wanted.
struct Gathered {
  std::vector<Vec3> xyz;
  std::vector<double> lon, lat;  // degrees
  std::vector<char> valid;
  std::vector<double> area;
  std::vector<i64> first;
  std::vector<int> holders;
};

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

// Collective: every rank's points of `g` (with `area`, per local point, or none), gathered.
Gathered gather(const Grid& g, const std::vector<double>& area, MPI_Comm comm, const char* side) {
  const std::string where = std::string("runoff_weights, ") + side + " grid " + g.name;
  const bool with_area = !area.empty();
  int p = 1;
  MPI_Comm_size(comm, &p);
  const int n = static_cast<int>(g.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  detail::check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  i64 total = 0;
  for (int r = 0; r < p; ++r) displs[static_cast<std::size_t>(r)] = static_cast<int>(total), total += counts[static_cast<std::size_t>(r)];
  if (total > INT32_MAX / 4) throw Error("grid too large to gather", where);
  // Per point: global index times 2 plus the mask bit; lon, lat, area.
  std::vector<i64> key(static_cast<std::size_t>(n));
  std::vector<double> val(3 * static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) {
    const auto u = static_cast<std::size_t>(k);
    key[u] = 2 * g.global_index(k) + (g.valid(k) ? 1 : 0);
    val[3 * u] = g.lon[u], val[3 * u + 1] = g.lat[u], val[3 * u + 2] = with_area ? area[u] : 0.0;
  }
  std::vector<i64> all_key(static_cast<std::size_t>(total));
  std::vector<double> all_val(3 * static_cast<std::size_t>(total));
  detail::check_mpi(MPI_Allgatherv(key.data(), n, MPI_INT64_T, all_key.data(), counts.data(), displs.data(),
                                   MPI_INT64_T, comm),
                    "MPI_Allgatherv");
  std::vector<int> c3(counts), d3(displs);
  for (auto& c : c3) c *= 3;
  for (auto& d : d3) d *= 3;
  detail::check_mpi(
      MPI_Allgatherv(val.data(), 3 * n, MPI_DOUBLE, all_val.data(), c3.data(), d3.data(), MPI_DOUBLE, comm),
      "MPI_Allgatherv");

  Gathered s;
  const auto ng = static_cast<std::size_t>(g.global_size);
  s.xyz.resize(ng);
  s.lon.assign(ng, 0.0);
  s.lat.assign(ng, 0.0);
  s.valid.assign(ng, 0);
  s.area.assign(ng, 0.0);
  s.first.assign(ng + 1, 0);
  std::vector<char> seen(ng, 0);
  std::vector<std::pair<i64, int>> held;  // (global index, rank), for the holder lists
  held.reserve(all_key.size());
  int r = 0;
  for (std::size_t k = 0; k < all_key.size(); ++k) {
    while (static_cast<i64>(k) >= displs[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)]) ++r;
    const i64 gi = all_key[k] / 2;
    if (gi < 0 || gi >= g.global_size)
      throw Error("point index " + std::to_string(gi) + " outside the grid of " + std::to_string(g.global_size) +
                      " points (rank " + std::to_string(r) + ")",
                  where);
    held.emplace_back(gi, r);
    const auto u = static_cast<std::size_t>(gi);
    if (seen[u]) continue;  // a repeat (halo): the first holder's copy
    seen[u] = 1;
    s.xyz[u] = sphere::unit_vector(all_val[3 * k], all_val[3 * k + 1]);
    s.lon[u] = all_val[3 * k], s.lat[u] = all_val[3 * k + 1];
    s.valid[u] = static_cast<char>(all_key[k] & 1);
    s.area[u] = all_val[3 * k + 2];
  }
  for (std::size_t u = 0; u < ng; ++u)
    if (!seen[u])
      throw Error("point " + std::to_string(u) + " is held by no rank", where,
                  "pass each rank's share of the grid so that together they cover it");
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  s.holders.reserve(held.size());
  for (const auto& [gi, rank] : held) {
    ++s.first[static_cast<std::size_t>(gi) + 1];
    s.holders.push_back(rank);
  }
  std::partial_sum(s.first.begin(), s.first.end(), s.first.begin());
  return s;
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
  Gathered s, t;
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
  });
  detail::agree(comm, [&] {
    s = gather(src, src_area, comm, "source");
    t = gather(dst, dst_area, comm, "target");
  });
  detail::agree(comm, [&] {
    const bool any_src = std::find(s.valid.begin(), s.valid.end(), 1) != s.valid.end();
    const auto ocean = static_cast<std::size_t>(std::count(t.valid.begin(), t.valid.end(), 1));
    if (any_src && ocean == 0)
      throw Error("the target grid " + dst.name + " has no unmasked point to receive the runoff", "runoff_weights",
                  "check the target mask (1 for the points that receive)");
    if (any_src && !spread && static_cast<std::size_t>(o.neighbors) > ocean)
      throw Error(std::to_string(o.neighbors) + " target neighbours asked for, but the target grid " + dst.name +
                      " has only " + std::to_string(ocean) + " unmasked points",
                  "runoff_weights", "ask for at most as many neighbours as there are unmasked target points");
    for (std::size_t u = 0; areas && u < s.area.size(); ++u)
      if (s.valid[u] && !(s.area[u] > 0))
        throw Error("source cell " + std::to_string(u) + " has area " + std::to_string(s.area[u]), "runoff_weights",
                    "give positive cell areas");
    for (std::size_t u = 0; areas && u < t.area.size(); ++u)
      if (t.valid[u] && !(t.area[u] > 0))
        throw Error("target cell " + std::to_string(u) + " has area " + std::to_string(t.area[u]), "runoff_weights",
                    "give positive cell areas");
  });

  const std::size_t nt = t.xyz.size();
  // OASIS's trigonometry of the target points (radians) and its angular distance.
  std::vector<double> cla(nt), sla(nt), clo(nt), slo(nt);
  for (std::size_t u = 0; u < nt; ++u) {
    cla[u] = std::cos(t.lat[u] * kDeg), sla[u] = std::sin(t.lat[u] * kDeg);
    clo[u] = std::cos(t.lon[u] * kDeg), slo[u] = std::sin(t.lon[u] * kDeg);
  }
  std::vector<i64> ocean;
  for (std::size_t u = 0; u < nt; ++u)
    if (t.valid[u]) ocean.push_back(static_cast<i64>(u));
  const std::size_t n_ocean = ocean.size();
  const KdTree tree(t.xyz, std::move(ocean));

  // This rank's block of source points.
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  const i64 ns = static_cast<i64>(s.xyz.size());
  const i64 lo = ns * r / p, hi = ns * (r + 1) / p;
  std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
  std::vector<i64> cand;
  std::vector<std::pair<double, i64>> near;  // (angle, target)
  std::vector<double> share;
  const auto nn = static_cast<std::size_t>(std::max(1, o.neighbors));
  for (i64 sg = lo; sg < hi; ++sg) {
    const auto su = static_cast<std::size_t>(sg);
    if (!s.valid[su] || tree.empty()) continue;
    const Vec3& q = s.xyz[su];
    const double sa = std::sin(s.lat[su] * kDeg), ca = std::cos(s.lat[su] * kDeg);
    const double so = std::sin(s.lon[su] * kDeg), co = std::cos(s.lon[su] * kDeg);
    auto dist = [&](i64 c) {
      const auto v = static_cast<std::size_t>(c);
      return oasis_angle(sa, ca, so, co, sla[v], cla[v], slo[v], clo[v]);
    };
    // OASIS's grid_search_nbr over the candidates within the k-th nearest chord (with slack;
    // the angle grows with the chord), in increasing index; more when points that coincide
    // with a kept one (skipped, as OASIS does) leave places empty.
    const std::size_t want = spread ? 1 : nn;
    for (std::size_t k = want;; k = std::min(2 * k, n_ocean)) {
      const double rk = tree.kth_sq_dist(q, k);
      cand.clear();
      tree.within(q, rk * (1 + 1e-9) + 1e-20, cand);
      std::sort(cand.begin(), cand.end());
      oasis_nearest(cand, want, dist, sla, cla, slo, clo, near);
      if (near.size() == want || k == n_ocean) break;
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
    for (std::size_t i = 0; i < near.size(); ++i) {
      const i64 tg = near[i].second;
      const auto tu = static_cast<std::size_t>(tg);
      double w = share[i];
      if (o.scaling == RunoffScaling::fracarea) w = w * s.area[su] / t.area[tu];
      else if (o.scaling == RunoffScaling::srcarea) w *= s.area[su];
      else if (o.scaling == RunoffScaling::invtgtarea) w /= t.area[tu];
      i64 bits = 0;
      std::memcpy(&bits, &w, sizeof bits);
      for (i64 h = t.first[tu]; h < t.first[tu + 1]; ++h) {
        auto& to = send[static_cast<std::size_t>(t.holders[static_cast<std::size_t>(h)])];
        to.push_back(tg);
        to.push_back(sg);
        to.push_back(bits);
      }
    }
  }
  std::vector<i64> recv_counts;
  const std::vector<i64> got = detail::alltoallv(comm, send, recv_counts);

  // The links of this rank's target points: by target, then by source index.
  struct L {
    i64 t, s;
    double w;
  };
  std::vector<L> mine(got.size() / 3);
  for (std::size_t k = 0; k < mine.size(); ++k) {
    mine[k].t = got[3 * k], mine[k].s = got[3 * k + 1];
    std::memcpy(&mine[k].w, &got[3 * k + 2], sizeof(double));
  }
  std::sort(mine.begin(), mine.end(), [](const L& a, const L& b) { return a.t != b.t ? a.t < b.t : a.s < b.s; });
  Links out;
  out.row.reserve(mine.size());
  out.col.reserve(mine.size());
  out.weight.reserve(mine.size());
  for (i64 k = 0; k < dst.size(); ++k) {
    const i64 g = dst.global_index(k);
    auto it = std::lower_bound(mine.begin(), mine.end(), g, [](const L& a, i64 v) { return a.t < v; });
    for (; it != mine.end() && it->t == g; ++it) out.add(g, it->s, it->w);
  }
  return out;
}

}  // namespace estuary
