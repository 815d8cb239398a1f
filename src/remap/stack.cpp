// The interpolation stack (YAC's interp_stack): stages run in order, each only for the targets
// the earlier ones left without links; creep fill composes neighbours' rows; fixed leaves the
// rest to RemapOptions::unmapped_value. One link matrix comes out.
#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"
#include "pointsearch.hpp"
#include "sphere.hpp"

namespace estuary {

using i64 = std::int64_t;

const char* name_of(StackStage::Kind k) {
  switch (k) {
    case StackStage::Kind::conservative: return "conservative";
    case StackStage::Kind::bilinear: return "bilinear";
    case StackStage::Kind::bicubic: return "bicubic";
    case StackStage::Kind::distance: return "distance";
    case StackStage::Kind::gaussian: return "gaussian";
    case StackStage::Kind::average: return "average";
    case StackStage::Kind::nnn: return "nnn";
    case StackStage::Kind::nearest: return "nearest";
    case StackStage::Kind::creep: return "creep";
    case StackStage::Kind::fixed: return "fixed";
  }
  return "?";
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

using Row = std::vector<std::pair<i64, double>>;

// An int64 message of mixed values: doubles travel as their bits.
i64 bits(double v) { return std::bit_cast<i64>(v); }
double real(i64 v) { return std::bit_cast<double>(v); }

// Appends a row (its length, then column and weight bits per entry) to a message; reads one back.
void put_row(std::vector<i64>& out, const Row& row) {
  out.push_back(static_cast<i64>(row.size()));
  for (const auto& [c, w] : row) out.push_back(c), out.push_back(bits(w));
}
Row get_row(const std::vector<i64>& in, std::size_t& at) {
  Row row(static_cast<std::size_t>(in[at++]));
  for (auto& [c, w] : row) c = in[at], w = real(in[at + 1]), at += 2;
  return row;
}

// Creep fill's targets, distributed by global index (detail::block_start): this rank's block
// [b0, b0 + n) of the target grid, each target's state gathered from the ranks holding it (the
// first of them in rank order is its owner, whose links are its row), and its neighbours.
struct CreepBlock {
  i64 b0 = 0, n = 0;
  std::vector<char> held, valid, filled;
  std::vector<int> owner;
  std::vector<std::vector<int>> holders;  // every rank holding the target (its crept row goes to each)
  std::vector<double> lon, lat;           // degrees (the first holder's)
  std::vector<double> corners;            // lon, lat per corner, n * ncorner pairs (unstructured only)
  std::vector<std::vector<i64>> nb;       // neighbours, increasing, without the target itself
  bool mine(i64 g) const { return g >= b0 && g < b0 + n; }
};

// Collective: each rank's targets to the owners of their indices.
CreepBlock creep_block(const Grid& dst, const std::vector<char>& has, i64 N, int ncorner, bool with_corners,
                       MPI_Comm comm) {
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  CreepBlock t;
  t.b0 = detail::block_start(N, me, p);
  t.n = detail::block_start(N, me + 1, p) - t.b0;
  const auto n = static_cast<std::size_t>(t.n), nc = with_corners ? static_cast<std::size_t>(ncorner) : 0;
  // Per target: global index times 4 plus valid (2) and has links (1), lon and lat, the corners.
  std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
  for (i64 k = 0; k < dst.size(); ++k) {
    const auto u = static_cast<std::size_t>(k);
    const i64 g = dst.global_index(k);
    auto& out = send[static_cast<std::size_t>(detail::block_owner(N, p, g))];
    out.insert(out.end(), {4 * g + (dst.valid(k) ? 2 : 0) + (has[u] ? 1 : 0), bits(dst.lon[u]), bits(dst.lat[u])});
    for (std::size_t c = 0; c < nc; ++c)
      out.insert(out.end(), {bits(dst.corner_lon[u * nc + c]), bits(dst.corner_lat[u * nc + c])});
  }
  std::vector<i64> counts;
  const std::vector<i64> got = detail::alltoallv(comm, send, counts);
  send = {};
  t.held.assign(n, 0), t.valid.assign(n, 0), t.filled.assign(n, 0), t.owner.assign(n, -1), t.holders.resize(n);
  t.lon.assign(n, 0.0), t.lat.assign(n, 0.0), t.corners.assign(2 * n * nc, 0.0);
  const std::size_t rec = 3 + 2 * nc;
  std::size_t at = 0;
  for (int r = 0; r < p; ++r)  // in rank order: the first holder's values win
    for (std::size_t end = at + static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]); at < end; at += rec) {
      const auto u = static_cast<std::size_t>(got[at] / 4 - t.b0);
      t.filled[u] = static_cast<char>(t.filled[u] | (got[at] & 1));
      if (t.holders[u].empty() || t.holders[u].back() != r) t.holders[u].push_back(r);
      if (t.held[u]) continue;
      t.held[u] = 1, t.owner[u] = r, t.valid[u] = static_cast<char>((got[at] >> 1) & 1);
      t.lon[u] = real(got[at + 1]), t.lat[u] = real(got[at + 2]);
      for (std::size_t c = 0; c < 2 * nc; ++c) t.corners[2 * u * nc + c] = real(got[at + 3 + c]);
    }
  return t;
}

// The neighbours of the block's targets. On a grid of dims {nx, ny}: (i+-1, j), (i, j+-1), i
// cyclic when the first row wraps (its first, second and last longitudes from their owners).
// Otherwise the held cells sharing an edge, as YAC's creep (its corners' unit vectors rounded to
// 1e-9): every edge goes to the rank its key hashes to, which pairs the cells meeting there and
// sends each pair back to the owner of its first cell.
void creep_neighbours(CreepBlock& t, bool rect, i64 nx, i64 ny, int ncorner, i64 N, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  const auto n = static_cast<std::size_t>(t.n);
  t.nb.assign(n, {});
  if (rect) {
    double l[3] = {0, 0, 0};  // the longitudes of points 0, 1 and nx - 1 (0 when no rank holds one)
    const i64 at[3] = {0, std::min<i64>(1, N - 1), nx - 1};
    for (int m = 0; m < 3; ++m)
      if (t.mine(at[m]) && t.held[static_cast<std::size_t>(at[m] - t.b0)]) l[m] = t.lon[static_cast<std::size_t>(at[m] - t.b0)];
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, l, 3, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
    const bool cyclic = detail::is_cyclic(l[0], l[1], l[2], nx);
    for (std::size_t u = 0; u < n; ++u) {
      const i64 g = t.b0 + static_cast<i64>(u), j = g / nx, i = g % nx;
      if (j >= ny) continue;
      auto& v = t.nb[u];
      if (i > 0) v.push_back(j * nx + i - 1);
      else if (cyclic && nx > 2) v.push_back(j * nx + nx - 1);
      if (i < nx - 1) v.push_back(j * nx + i + 1);
      else if (cyclic && nx > 2) v.push_back(j * nx);
      if (j > 0) v.push_back((j - 1) * nx + i);
      if (j < ny - 1) v.push_back((j + 1) * nx + i);
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    return;
  }
  const auto nc = static_cast<std::size_t>(ncorner);
  std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
  // An edge is the pair of its end corners (unit vectors rounded to 1e-9), smaller first; a
  // repeated corner (a triangle stored with four) makes no edge.
  auto corner_key = [&](std::size_t u, std::size_t c) {
    const auto v = sphere::unit_vector(t.corners[2 * (u * nc + c)], t.corners[2 * (u * nc + c) + 1]);
    return std::array<i64, 3>{std::llround(v.x * 1e9), std::llround(v.y * 1e9), std::llround(v.z * 1e9)};
  };
  for (std::size_t u = 0; u < n; ++u) {
    if (!t.held[u]) continue;
    for (std::size_t c = 0; c < nc; ++c) {
      std::array<i64, 3> a = corner_key(u, c), b = corner_key(u, (c + 1) % nc);
      if (a == b) continue;
      if (b < a) std::swap(a, b);
      std::uint64_t h = 0;
      for (const i64 x : {a[0], a[1], a[2], b[0], b[1], b[2]}) h = (h ^ static_cast<std::uint64_t>(x)) * 0x9E3779B97F4A7C15ULL;
      auto& to = send[static_cast<std::size_t>(h % static_cast<std::uint64_t>(p))];
      to.insert(to.end(), {a[0], a[1], a[2], b[0], b[1], b[2], t.b0 + static_cast<i64>(u)});
    }
  }
  std::vector<i64> counts;
  std::vector<i64> got = detail::alltoallv(comm, send, counts);
  send.assign(static_cast<std::size_t>(p), {});
  std::map<std::array<i64, 6>, std::vector<i64>> at;
  for (std::size_t q = 0; q + 6 < got.size(); q += 7)
    at[{got[q], got[q + 1], got[q + 2], got[q + 3], got[q + 4], got[q + 5]}].push_back(got[q + 6]);
  got = {};
  for (auto& [key, cells] : at) {
    std::sort(cells.begin(), cells.end());
    cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
    for (i64 a : cells)
      for (i64 b : cells)
        if (a != b) send[static_cast<std::size_t>(detail::block_owner(N, p, a))].insert(send[static_cast<std::size_t>(detail::block_owner(N, p, a))].end(), {a, b});
  }
  at.clear();
  const std::vector<i64> pairs = detail::alltoallv(comm, send, counts);
  for (std::size_t q = 0; q + 1 < pairs.size(); q += 2) t.nb[static_cast<std::size_t>(pairs[q] - t.b0)].push_back(pairs[q + 1]);
  for (auto& v : t.nb) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

// The halo of a block: the neighbours of its targets that other ranks own (increasing, which is
// also the order of their owners), and per rank the targets of this block it sends that rank.
struct CreepHalo {
  std::vector<i64> index;
  std::vector<int> wave;                  // per halo target: -1 filled from the start, s crept in step s, INT_MAX not yet
  std::vector<std::vector<i64>> serve;    // per rank, increasing
  std::size_t find(i64 g) const { return static_cast<std::size_t>(std::lower_bound(index.begin(), index.end(), g) - index.begin()); }
};

CreepHalo creep_halo(const CreepBlock& t, i64 N, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  CreepHalo h;
  for (std::size_t u = 0; u < t.nb.size(); ++u)
    if (t.held[u])
      for (i64 b : t.nb[u])
        if (!t.mine(b)) h.index.push_back(b);
  std::sort(h.index.begin(), h.index.end());
  h.index.erase(std::unique(h.index.begin(), h.index.end()), h.index.end());
  h.wave.assign(h.index.size(), INT_MAX);
  std::vector<std::vector<i64>> ask(static_cast<std::size_t>(p));
  for (i64 b : h.index) ask[static_cast<std::size_t>(detail::block_owner(N, p, b))].push_back(b);
  std::vector<i64> counts;
  const std::vector<i64> asked = detail::alltoallv(comm, ask, counts);
  h.serve.resize(static_cast<std::size_t>(p));
  std::size_t at = 0;
  for (int r = 0; r < p; ++r)
    for (i64 c = 0; c < counts[static_cast<std::size_t>(r)]; ++c) h.serve[static_cast<std::size_t>(r)].push_back(asked[at++]);
  return h;
}

}  // namespace

void creep_fill(const Grid& dst, MPI_Comm comm, Links& links, int steps) {
  std::vector<char> has(static_cast<std::size_t>(dst.size()), 0);
  bool rect = true;
  i64 nx = 0, ny = 0, N = 0;
  int ncorner = 0;
  detail::agree(comm, [&] {
    dst.check();
    std::unordered_map<i64, std::size_t> local;
    for (i64 k = 0; k < dst.size(); ++k) local.emplace(dst.global_index(k), static_cast<std::size_t>(k));
    for (i64 r : links.row) {
      auto it = local.find(r);
      if (it == local.end())
        throw Error("a link's target point " + std::to_string(r) + " is not one of this rank's target points",
                    "creep_fill");
      has[it->second] = 1;
    }
    // The neighbour kind, decided by the ranks holding points (the others may not know the dims).
    i64 v[5] = {dst.size() > 0 && !(dst.dims.size() == 2 && dst.dims[0] * dst.dims[1] == dst.global_size) ? 1 : 0,
                dst.size() > 0 && dst.dims.size() == 2 ? dst.dims[0] : 0,
                dst.size() > 0 && dst.dims.size() == 2 ? dst.dims[1] : 0, dst.global_size, dst.size() > 0 ? dst.ncorner : 0};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    rect = v[0] == 0;
    nx = v[1], ny = v[2], N = v[3], ncorner = static_cast<int>(v[4]);
    if (dst.size() > 0 && dst.ncorner != ncorner)
      throw Error("the ranks' target grids have different numbers of corners", "creep_fill");
    for (i64 k = 0; k < dst.size(); ++k)
      if (const i64 gi = dst.global_index(k); gi < 0 || gi >= N)
        throw Error("target point index " + std::to_string(gi) + " outside the grid of " + std::to_string(N) + " points",
                    "creep_fill");
    if (!rect && ncorner < 3)
      throw Error("creep fill on target grid " + dst.name + " needs its cell corners (it is not two-dimensional)",
                  "creep_fill", "give the target grid's corners, or dims {nx, ny}");
  });
  int p = 1, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  CreepBlock t = creep_block(dst, has, N, ncorner, !rect, comm);
  creep_neighbours(t, rect, nx, ny, ncorner, N, comm);
  t.corners = {};
  CreepHalo h = creep_halo(t, N, comm);
  const auto n = static_cast<std::size_t>(t.n);
  // Which step fills each target (-1: filled from the start, INT_MAX: never), from the flags of
  // the block and of its halo, exchanged after every step.
  std::vector<int> wave(n, INT_MAX);
  for (std::size_t u = 0; u < n; ++u)
    if (t.filled[u]) wave[u] = -1;
  const auto filled_by = [&](i64 b, int s) {  // b filled before step s
    return t.mine(b) ? wave[static_cast<std::size_t>(b - t.b0)] < s : h.wave[h.find(b)] < s;
  };
  const auto exchange_flags = [&](int s) {
    std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
      for (i64 b : h.serve[static_cast<std::size_t>(r)]) send[static_cast<std::size_t>(r)].push_back(wave[static_cast<std::size_t>(b - t.b0)] < s ? 1 : 0);
    std::vector<i64> counts;
    const std::vector<i64> got = detail::alltoallv(comm, send, counts);  // in the order of h.index
    for (std::size_t q = 0; q < got.size(); ++q)
      if (got[q] && h.wave[q] == INT_MAX) h.wave[q] = s - 1;
  };
  exchange_flags(0);
  std::vector<std::vector<i64>> waves;  // this block's targets filled by each step, increasing
  for (int s = 0; steps < 0 || s < steps; ++s) {
    std::vector<i64> now;
    for (std::size_t u = 0; u < n; ++u) {
      if (!t.held[u] || !t.valid[u] || wave[u] != INT_MAX) continue;
      for (i64 b : t.nb[u])
        if (filled_by(b, s)) {
          now.push_back(t.b0 + static_cast<i64>(u));
          break;
        }
    }
    i64 any = static_cast<i64>(now.size());
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
    if (any == 0) break;
    for (i64 g : now) wave[static_cast<std::size_t>(g - t.b0)] = s;
    waves.push_back(std::move(now));
    exchange_flags(s + 1);
  }
  const int nsteps = static_cast<int>(waves.size());
  // The rows of the targets filled from the start that creep reads (those with a crept
  // neighbour), asked of their owners.
  const auto crept = [&](i64 b) {
    const int w = t.mine(b) ? wave[static_cast<std::size_t>(b - t.b0)] : h.wave[h.find(b)];
    return w >= 0 && w != INT_MAX;
  };
  std::vector<std::vector<i64>> ask(static_cast<std::size_t>(p));
  for (std::size_t u = 0; u < n; ++u) {
    if (wave[u] != -1) continue;
    for (i64 b : t.nb[u])
      if (crept(b)) {
        ask[static_cast<std::size_t>(t.owner[u])].push_back(t.b0 + static_cast<i64>(u));
        break;
      }
  }
  std::unordered_map<i64, Row> rows;
  {
    std::vector<i64> counts;
    const std::vector<i64> asked = detail::alltoallv(comm, ask, counts);
    std::unordered_map<i64, Row> mine;  // the asked rows of this rank's links, in link order
    for (i64 g : asked) mine.emplace(g, Row{});
    for (std::size_t l = 0; l < links.row.size(); ++l)
      if (auto it = mine.find(links.row[l]); it != mine.end()) it->second.emplace_back(links.col[l], links.weight[l]);
    std::vector<std::vector<i64>> answer(static_cast<std::size_t>(p));
    std::size_t at = 0;
    for (int r = 0; r < p; ++r)
      for (i64 c = 0; c < counts[static_cast<std::size_t>(r)]; ++c) put_row(answer[static_cast<std::size_t>(r)], mine[asked[at++]]);
    mine.clear();
    const std::vector<i64> got = detail::alltoallv(comm, answer, counts);
    at = 0;
    for (int r = 0; r < p; ++r)
      for (i64 g : ask[static_cast<std::size_t>(r)]) rows[g] = get_row(got, at);
  }
  // Step by step: the halo's rows that became known (those filled from the start, then each
  // step's), then the mean of the filled neighbours' rows, in increasing index.
  const auto exchange_rows = [&](int s) {  // the rows of the targets with wave s
    std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
      for (i64 b : h.serve[static_cast<std::size_t>(r)])
        if (wave[static_cast<std::size_t>(b - t.b0)] == s && rows.count(b)) {
          send[static_cast<std::size_t>(r)].push_back(b);
          put_row(send[static_cast<std::size_t>(r)], rows[b]);
        }
    std::vector<i64> counts;
    const std::vector<i64> got = detail::alltoallv(comm, send, counts);
    for (std::size_t at = 0; at < got.size();) {
      const i64 g = got[at++];
      rows[g] = get_row(got, at);
    }
  };
  exchange_rows(-1);
  for (int s = 0; s < nsteps; ++s) {
    for (i64 g : waves[static_cast<std::size_t>(s)]) {
      std::vector<i64> from;
      for (i64 b : t.nb[static_cast<std::size_t>(g - t.b0)])
        if (filled_by(b, s)) from.push_back(b);
      const double m = static_cast<double>(from.size());
      std::map<i64, double> acc;
      for (i64 b : from)
        for (const auto& [c, w] : rows[b]) acc[c] += w / m;
      rows[g] = Row(acc.begin(), acc.end());
    }
    exchange_rows(s);
  }
  // The crept rows to every rank holding their targets.
  std::vector<std::vector<i64>> send(static_cast<std::size_t>(p));
  for (const auto& w : waves)
    for (i64 g : w)
      for (int r : t.holders[static_cast<std::size_t>(g - t.b0)]) {
        send[static_cast<std::size_t>(r)].push_back(g);
        put_row(send[static_cast<std::size_t>(r)], rows[g]);
      }
  rows.clear();
  std::vector<i64> counts;
  const std::vector<i64> got = detail::alltoallv(comm, send, counts);
  std::unordered_map<i64, Row> result;
  for (std::size_t at = 0; at < got.size();) {
    const i64 g = got[at++];
    result[g] = get_row(got, at);
  }
  for (i64 k = 0; k < dst.size(); ++k)
    if (auto it = result.find(dst.global_index(k)); it != result.end())
      for (const auto& [c, w] : it->second) links.add(it->first, c, w);
}

namespace {
// A conservative target counts as wholly covered by unmasked source cells when they cover all
// of it but this part (the overlaps' areas carry rounding; partial_coverage false).
constexpr double kFullCoverage = 1e-6;

// YAC's methods that are not stages here, and what to use instead.
const char* yac_method_elsewhere(const std::string& name) {
  if (name == "source_to_target_map")
    return "runoff spreading is a coupling's own method: scripr: {method: spmap, spread_distance: ..., "
           "max_search_distance: ...} (docs/remap.md, \"Runoff mapping\")";
  if (name == "user_file") return "give the weight file to the coupling: mapping: FILE (YAC's files are read as YAC writes them)";
  if (name == "user_callback") return "scripr: {method: callback, name: ...} (docs/configuration.md)";
  if (name == "bernstein_bezier") return "bicubic, or nnn with weighting gauss, are the closest stages";
  if (name == "ncc" || name == "check" || name == "hcsbb")
    return "estuary offers no such method (refused rather than skipped); the stages are conservative, bilinear, "
           "bicubic, distance, gaussian, average, nnn, rbf, nearest, creep and fixed";
  return nullptr;
}

// The parameters a stage takes (for the error naming one it does not).
const char* parameters_of(StackStage::Kind k) {
  using K = StackStage::Kind;
  switch (k) {
    case K::conservative: return "order, normalization (YAC: normalisation), partial_coverage, enforced_conservation";
    case K::bilinear:
    case K::bicubic: return "extrapolate";
    case K::distance: return "n";
    case K::gaussian: return "n, variance";
    case K::average: return "weighting (YAC: weighted), partial_coverage";
    case K::nnn: return "n, weighting (YAC: weighted), scale (YAC: gauss_scale, rbf_scale), max_search_distance, rbf_kernel";
    case K::nearest: return "max_search_distance";
    case K::creep: return "steps (YAC: creep_distance)";
    case K::fixed: return "value (YAC: user_value)";
  }
  return "";
}

// YAC's spellings of keys and values (its YAML configuration, config_yaml.c) as this stack's:
// weighted -> weighting with YAC's value names, normalisation, creep_distance, user_value.
std::pair<std::string, std::string> yac_spelling(StackStage::Kind kind, std::string key, std::string value) {
  using K = StackStage::Kind;
  if (key == "normalisation") key = "normalization";
  if (key == "creep_distance") key = "steps";
  if (key == "user_value") key = "value";
  if (key == "weighted") {
    key = "weighting";
    if (value == "distance_weighted") value = "distance";
    else if (value == "gauss_weighted") value = "gauss";
    else if (value == "barycentric_coordinate") value = "barycentric";
    else if (value == "arithmetic_average") value = kind == K::average ? "arithmetic" : "average";
  }
  return {key, value};
}
}  // namespace

StackStage make_stage(const std::string& name_in, const std::vector<std::pair<std::string, std::string>>& params,
                      const std::string& where) {
  const std::string name = lower(name_in);
  StackStage s;
  using K = StackStage::Kind;
  if (name == "conservative" || name == "conserv") s.kind = K::conservative;
  else if (name == "bilinear") s.kind = K::bilinear;
  else if (name == "bicubic") s.kind = K::bicubic;
  else if (name == "distance" || name == "distwgt") s.kind = K::distance;
  else if (name == "gaussian" || name == "gauswgt") s.kind = K::gaussian;
  else if (name == "average" || name == "avg") s.kind = K::average;
  else if (name == "nnn") s.kind = K::nnn;
  else if (name == "rbf") s.kind = K::nnn, s.nnn.n = 9, s.nnn.weighting = NnnWeighting::rbf;  // YAC's rbf method
  else if (name == "nearest") s.kind = K::nearest, s.nnn.n = 1;
  else if (name == "creep") s.kind = K::creep;
  else if (name == "fixed") s.kind = K::fixed;
  else if (const char* instead = yac_method_elsewhere(name))
    throw Error("YAC's interpolation '" + name_in + "' is not a stage of estuary's stack", where, instead);
  else
    throw Error("unknown interpolation stage '" + name_in + "'", where,
                "use conservative, bilinear, bicubic, distance, gaussian, average, nnn, rbf, nearest, creep or fixed");
  // YAC's defaults for what YAC has (interp_method_conservative.h): destarea, and targets only
  // part-covered by unmasked source cells left to the next stage. (On a covered target
  // destarea and fracarea are the same weights.)
  if (s.kind == K::conservative) s.conservative.normalization = ConservNormalization::destarea;
  bool have_value = false;
  for (const auto& [key_in, value_in] : params) {
    const auto [key, value] = yac_spelling(s.kind, lower(key_in), lower(value_in));
    std::string bad;
    bad.append("parameter '").append(key_in).append("' = '").append(value_in).append("' of stage ").append(name);
    auto as_int = [&](int lo) {
      std::size_t end = 0;
      int v = 0;
      try {
        v = std::stoi(value, &end);
      } catch (const std::exception&) {
        end = std::string::npos;
      }
      if (end != value.size() || v < lo) throw Error(bad + " is not an integer >= " + std::to_string(lo), where);
      return v;
    };
    auto as_double = [&]() {
      std::size_t end = 0;
      double v = 0;
      try {
        v = std::stod(value, &end);
      } catch (const std::exception&) {
        end = std::string::npos;
      }
      if (end != value.size() || !std::isfinite(v)) throw Error(bad + " is not a number", where);
      return v;
    };
    auto as_bool = [&]() {
      if (value == "true" || value == "1" || value == "yes") return true;
      if (value == "false" || value == "0" || value == "no") return false;
      throw Error(bad + " is not true or false", where);
    };
    auto choose = [&](std::initializer_list<const char*> names) {
      int i = 0;
      for (const char* n : names) {
        if (value == n) return i;
        ++i;
      }
      std::string list;
      for (const char* n : names) list.append(list.empty() ? "" : ", ").append(n);
      throw Error(bad + " is not one of " + list, where);
    };
    if (s.kind == K::conservative && key == "order") {
      s.conservative.order = as_int(1);
      if (s.conservative.order > 2) throw Error(bad + " is not 1 or 2", where);
    } else if (s.kind == K::conservative && key == "normalization") {
      s.conservative.normalization = static_cast<ConservNormalization>(choose({"fracarea", "destarea", "none"}));
    } else if (s.kind == K::conservative && key == "partial_coverage") {
      s.partial_coverage = as_bool();
    } else if (s.kind == K::conservative && key == "enforced_conservation") {
      if (as_bool())  // estuary offers the global correction instead; refused, not ignored
        throw Error(bad + ": YAC's enforced conservation (a correction of each source cell's weights) is not "
                          "offered by estuary's stack",
                    where, "leave it false, or use CONSERV GLOBAL on the coupling");
    } else if ((s.kind == K::bilinear || s.kind == K::bicubic) && key == "extrapolate") {
      s.bilinear.extrapolate = as_bool();
    } else if (s.kind == K::distance && key == "n") {
      s.distance.neighbors = as_int(1);
    } else if (s.kind == K::gaussian && key == "n") {
      s.gaussian.neighbors = as_int(1);
    } else if (s.kind == K::gaussian && key == "variance") {
      s.gaussian.variance = as_double();
    } else if (s.kind == K::average && key == "weighting") {
      s.average.weighting = static_cast<AverageWeighting>(choose({"arithmetic", "distance", "barycentric"}));
    } else if (s.kind == K::average && key == "partial_coverage") {
      s.average.partial_coverage = as_bool();
    } else if (s.kind == K::nnn && key == "n") {
      s.nnn.n = as_int(1);
    } else if (s.kind == K::nnn && key == "weighting") {
      s.nnn.weighting = static_cast<NnnWeighting>(choose({"average", "distance", "gauss", "rbf"}));
    } else if (s.kind == K::nnn && key == "scale") {
      s.nnn.gauss_scale = s.nnn.rbf_scale = as_double();
      if (!(s.nnn.gauss_scale > 0)) throw Error(bad + " is not positive", where);
    } else if (s.kind == K::nnn && (key == "gauss_scale" || key == "rbf_scale")) {  // YAC's, one each
      const double scale = as_double();
      if (!(scale > 0)) throw Error(bad + " is not positive", where);
      (key == "gauss_scale" ? s.nnn.gauss_scale : s.nnn.rbf_scale) = scale;
    } else if (s.kind == K::nnn && key == "rbf_kernel") {
      if (value != "gauss_kernel") throw Error(bad + " is not gauss_kernel (YAC's only kernel)", where);
    } else if ((s.kind == K::nnn || s.kind == K::nearest) && key == "max_search_distance") {
      s.nnn.max_search_distance = as_double();
      if (s.nnn.max_search_distance < 0 || s.nnn.max_search_distance > 180)
        throw Error(bad + " is not in [0, 180] degrees", where);
    } else if (s.kind == K::creep && key == "steps") {
      s.creep_steps = value == "-1" ? -1 : as_int(0);
    } else if (s.kind == K::fixed && key == "value") {
      s.fixed_value = as_double();
      have_value = true;
    } else {
      throw Error("stage " + name + " has no parameter '" + key_in + "'", where,
                  std::string("its parameters: ") + parameters_of(s.kind) + " (docs/configuration.md, interpolation)");
    }
  }
  if (s.kind == K::fixed && !have_value) throw Error("stage fixed needs a value", where, "e.g. fixed value=-999");
  // YAC's nnn with n = 1 is the nearest source point, whatever the weighting.
  if (s.kind == K::nnn && s.nnn.n < 2) s.nnn.weighting = NnnWeighting::average;
  return s;
}

std::vector<StageSpec> split_stack(const std::string& text, const std::string& where) {
  std::vector<StageSpec> out;
  StageSpec cur;
  auto close = [&](bool last) {
    if (cur.name.empty())
      throw Error(last ? "the stack ends with '|' or is empty" : "an empty stage between '|'", where,
                  "write e.g. 'bilinear | nnn n=4 | fixed value=-999'");
    out.push_back(cur);
    cur = StageSpec{};
  };
  std::string word;
  std::istringstream in(text);
  while (in >> word) {
    if (word[0] == '#') break;
    std::size_t from = 0;
    while (true) {  // a word may hold '|' itself ("bilinear|nnn")
      const std::size_t bar = word.find('|', from);
      const std::string part = word.substr(from, bar == std::string::npos ? std::string::npos : bar - from);
      if (!part.empty()) {
        const std::size_t eq = part.find('=');
        if (cur.name.empty() && eq != std::string::npos)
          throw Error("stage " + std::to_string(out.size() + 1) + " starts with '" + part + "' instead of a method name",
                      where);
        if (cur.name.empty()) {
          cur.name = part;
        } else {
          if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
            throw Error("stage " + cur.name + ": expected key=value, found '" + part + "'", where, "e.g. 'nnn n=4'");
          cur.params.emplace_back(part.substr(0, eq), part.substr(eq + 1));
        }
      }
      if (bar == std::string::npos) break;
      close(false);
      from = bar + 1;
    }
  }
  close(true);
  return out;
}

std::vector<StackStage> stack_from_text(const std::string& text, const std::string& where) {
  std::vector<StackStage> stages;
  for (const StageSpec& st : split_stack(text, where)) stages.push_back(make_stage(st.name, st.params, where));
  check_stack(stages, where);
  return stages;
}

std::string describe(const std::vector<StackStage>& stages) {
  std::string out;
  using K = StackStage::Kind;
  for (const auto& s : stages) {
    if (!out.empty()) out += " | ";
    out += name_of(s.kind);
    switch (s.kind) {
      case K::conservative:
        out.append(" order=").append(std::to_string(s.conservative.order)).append(" normalization=");
        out += name_of(s.conservative.normalization);
        if (s.partial_coverage) out += " partial_coverage=true";
        break;
      case K::bilinear:
      case K::bicubic:  // unset: CDO's default (by the source grid), said by nothing
        if (s.bilinear.extrapolate) out += *s.bilinear.extrapolate ? " extrapolate=true" : " extrapolate=false";
        break;
      case K::distance: out.append(" n=").append(std::to_string(s.distance.neighbors)); break;
      case K::gaussian:
        out.append(" n=").append(std::to_string(s.gaussian.neighbors)).append(" variance=").append(num(s.gaussian.variance));
        break;
      case K::average: {
        const char* w[] = {"arithmetic", "distance", "barycentric"};
        out.append(" weighting=").append(w[static_cast<int>(s.average.weighting)]);
        out += s.average.partial_coverage ? " partial_coverage=true" : " partial_coverage=false";
        break;
      }
      case K::nnn:
      case K::nearest: {
        const char* w[] = {"average", "distance", "gauss", "rbf"};
        out.append(" n=").append(std::to_string(s.nnn.n)).append(" weighting=").append(w[static_cast<int>(s.nnn.weighting)]);
        out.append(" scale=").append(num(s.nnn.weighting == NnnWeighting::rbf ? s.nnn.rbf_scale : s.nnn.gauss_scale));
        out.append(" max_search_distance=").append(num(s.nnn.max_search_distance));
        break;
      }
      case K::creep: out.append(" steps=").append(std::to_string(s.creep_steps)); break;
      case K::fixed: out.append(" value=").append(num(s.fixed_value)); break;
    }
  }
  return out;
}

void check_stack(const std::vector<StackStage>& stages, const std::string& where) {
  using K = StackStage::Kind;
  if (stages.empty()) throw Error("the interpolation stack is empty", where, "list at least one stage");
  for (std::size_t i = 0; i + 1 < stages.size(); ++i)
    if (stages[i].kind == K::fixed)
      throw Error("stage " + std::to_string(i + 1) + " (fixed) is not the last: the stages after it would never run",
                  where, "put fixed last");
  if (stages.front().kind == K::creep)
    throw Error("the stack starts with creep: there is nothing to creep from", where, "put an interpolation before creep");
}

StackWeights stack_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const std::vector<StackStage>& stages) {
  using K = StackStage::Kind;
  detail::agree(comm, [&] {
    src.check();
    dst.check();
    check_stack(stages, "stack_weights");
  });
  const auto n = static_cast<std::size_t>(dst.size());
  std::unordered_map<i64, std::size_t> local;
  for (std::size_t u = 0; u < n; ++u) local.emplace(dst.global_index(static_cast<i64>(u)), u);
  std::vector<Row> rows(n);
  std::vector<char> done(n, 0);
  StackWeights out;
  // Puts a stage's links into the rows of the targets not yet done (the stage may repeat a target
  // when dst holds a point twice).
  auto take = [&](const Links& l) {
    std::vector<char> now(n, 0);
    for (std::size_t i = 0; i < l.row.size(); ++i) {
      const std::size_t u = local.at(l.row[i]);
      if (done[u]) continue;
      rows[u].emplace_back(l.col[i], l.weight[i]);
      now[u] = 1;
    }
    i64 count = 0;
    for (std::size_t u = 0; u < n; ++u)
      if (now[u]) done[u] = 1, ++count;
    return count;
  };
  for (const StackStage& st : stages) {
    i64 count = 0, open = 0;
    for (std::size_t u = 0; u < n; ++u) open += !done[u] && dst.valid(static_cast<i64>(u)) ? 1 : 0;
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &open, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
    if (open == 0) {  // the stages before filled every target: nothing to generate (no empty grid to check)
      out.filled.push_back(0);
      if (st.kind == K::fixed) out.has_fixed = true, out.fixed_value = st.fixed_value;
      continue;
    }
    if (st.kind == K::fixed) {
      out.has_fixed = true;
      out.fixed_value = st.fixed_value;
      for (std::size_t u = 0; u < n; ++u) count += !done[u] && dst.valid(static_cast<i64>(u)) ? 1 : 0;
    } else if (st.kind == K::creep) {
      Links cur;
      for (std::size_t u = 0; u < n; ++u)
        for (const auto& [c, w] : rows[u]) cur.add(dst.global_index(static_cast<i64>(u)), c, w);
      const std::size_t before = cur.row.size();
      creep_fill(dst, comm, cur, st.creep_steps);
      Links added;
      for (std::size_t i = before; i < cur.row.size(); ++i) added.add(cur.row[i], cur.col[i], cur.weight[i]);
      count = take(added);
    } else {
      // The targets still open, as a grid of their own.
      Grid sub = dst;
      for (auto* v : {&sub.lon, &sub.lat, &sub.corner_lon, &sub.corner_lat, &sub.area, &sub.frac}) v->clear();
      sub.points.clear();
      sub.mask.clear();
      const auto nc = static_cast<std::size_t>(dst.ncorner);
      for (std::size_t u = 0; u < n; ++u) {
        if (done[u] || !dst.valid(static_cast<i64>(u))) continue;
        sub.points.push_back(dst.global_index(static_cast<i64>(u)));
        sub.lon.push_back(dst.lon[u]);
        sub.lat.push_back(dst.lat[u]);
        for (std::size_t c = 0; c < nc; ++c) {
          sub.corner_lon.push_back(dst.corner_lon[u * nc + c]);
          sub.corner_lat.push_back(dst.corner_lat[u * nc + c]);
        }
        if (!dst.area.empty()) sub.area.push_back(dst.area[u]);
      }
      Links l;
      switch (st.kind) {
        case K::conservative: {
          ConservativeWeights cw = conservative_weights(src, sub, comm, st.conservative);
          if (!st.partial_coverage) {  // YAC's default: a target not wholly covered goes on to the next stage
            std::vector<i64> part;
            for (std::size_t u = 0; u < cw.dst_frac.size(); ++u)
              if (cw.dst_frac[u] < 1.0 - kFullCoverage) part.push_back(sub.points[u]);
            std::sort(part.begin(), part.end());
            Links kept;
            for (i64 k = 0; k < cw.links.size(); ++k) {
              const auto e = static_cast<std::size_t>(k);
              if (!std::binary_search(part.begin(), part.end(), cw.links.row[e]))
                kept.add(cw.links.row[e], cw.links.col[e], cw.links.weight[e]);
            }
            cw.links = std::move(kept);
          }
          l = std::move(cw.links);
          break;
        }
        case K::bilinear: l = bilinear_weights(src, sub, comm, st.bilinear); break;
        case K::bicubic: l = bicubic_weights(src, sub, comm, st.bilinear).links; break;
        case K::distance: l = distance_weights(src, sub, comm, st.distance); break;
        case K::gaussian: l = gaussian_weights(src, sub, comm, st.gaussian); break;
        case K::average: l = average_weights(src, sub, comm, st.average); break;
        case K::nnn:
        case K::nearest: l = nnn_weights(src, sub, comm, st.nnn); break;
        default: break;
      }
      count = take(l);
    }
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
    out.filled.push_back(count);
    if (st.kind == K::fixed) break;
  }
  for (std::size_t u = 0; u < n; ++u)
    for (const auto& [c, w] : rows[u]) out.links.add(dst.global_index(static_cast<i64>(u)), c, w);
  return out;
}

}  // namespace estuary
