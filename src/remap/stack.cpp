// The interpolation stack (YAC's interp_stack): stages run in order, each only for the targets
// the earlier ones left without links; creep fill composes neighbours' rows; fixed leaves the
// rest to RemapOptions::unmapped_value. One link matrix comes out.
#include <algorithm>
#include <array>
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

// Every target point the ranks hold, by global index: whether it is valid, has links, who holds
// it first (rank order), and its geometry for the neighbour search.
struct Targets {
  i64 n = 0;
  std::vector<char> held, valid, filled;
  std::vector<int> owner;
  std::vector<double> lon, lat;    // degrees
  int ncorner = 0;
  std::vector<double> clon, clat;  // n * ncorner
};

template <class T>
std::vector<T> allgatherv(const std::vector<T>& mine, MPI_Datatype type, MPI_Comm comm, std::vector<int>* from = nullptr) {
  const int n = static_cast<int>(mine.size());
  std::vector<int> displs;
  const std::vector<int> counts = detail::allgather_counts(n, comm, displs, "creep_fill");
  const int p = static_cast<int>(counts.size());
  const i64 total = static_cast<i64>(displs.back()) + counts.back();
  std::vector<T> all(static_cast<std::size_t>(total));
  detail::check_mpi(MPI_Allgatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, comm),
                    "MPI_Allgatherv");
  if (from) {
    from->assign(all.size(), 0);
    for (int r = 0; r < p; ++r)
      for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i)
        (*from)[static_cast<std::size_t>(displs[static_cast<std::size_t>(r)] + i)] = r;
  }
  return all;
}

Targets gather_targets(const Grid& dst, const std::vector<char>& has_links, MPI_Comm comm) {
  Targets t;
  i64 g[2] = {dst.global_size, dst.size() > 0 ? dst.ncorner : 0};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, g, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  t.n = g[0];
  t.ncorner = static_cast<int>(g[1]);
  const auto n = static_cast<std::size_t>(dst.size());
  const auto nc = static_cast<std::size_t>(t.ncorner);
  if (n > 0 && dst.ncorner != t.ncorner)
    throw Error("the ranks' target grids have different numbers of corners", "creep_fill");
  std::vector<i64> key(n);
  std::vector<double> ll(2 * n), corners(2 * n * nc);
  for (std::size_t u = 0; u < n; ++u) {
    const i64 k = static_cast<i64>(u);
    key[u] = 4 * dst.global_index(k) + (dst.valid(k) ? 2 : 0) + (has_links[u] ? 1 : 0);
    ll[2 * u] = dst.lon[u];
    ll[2 * u + 1] = dst.lat[u];
    for (std::size_t c = 0; c < nc; ++c) {
      corners[2 * (u * nc + c)] = dst.corner_lon[u * nc + c];
      corners[2 * (u * nc + c) + 1] = dst.corner_lat[u * nc + c];
    }
  }
  std::vector<int> from;
  const auto all_key = allgatherv(key, MPI_INT64_T, comm, &from);
  const auto all_ll = allgatherv(ll, MPI_DOUBLE, comm);
  const auto all_c = allgatherv(corners, MPI_DOUBLE, comm);
  const auto N = static_cast<std::size_t>(t.n);
  t.held.assign(N, 0), t.valid.assign(N, 0), t.filled.assign(N, 0), t.owner.assign(N, -1);
  t.lon.assign(N, 0.0), t.lat.assign(N, 0.0), t.clon.assign(N * nc, 0.0), t.clat.assign(N * nc, 0.0);
  for (std::size_t k = 0; k < all_key.size(); ++k) {
    const i64 gi = all_key[k] / 4;
    if (gi < 0 || gi >= t.n)
      throw Error("target point index " + std::to_string(gi) + " outside the grid of " + std::to_string(t.n) + " points",
                  "creep_fill");
    const auto u = static_cast<std::size_t>(gi);
    t.filled[u] = static_cast<char>(t.filled[u] | (all_key[k] & 1));
    if (t.held[u]) continue;
    t.held[u] = 1;
    t.owner[u] = from[k];
    t.valid[u] = static_cast<char>((all_key[k] >> 1) & 1);
    t.lon[u] = all_ll[2 * k];
    t.lat[u] = all_ll[2 * k + 1];
    for (std::size_t c = 0; c < nc; ++c) {
      t.clon[u * nc + c] = all_c[2 * (k * nc + c)];
      t.clat[u * nc + c] = all_c[2 * (k * nc + c) + 1];
    }
  }
  return t;
}

// The neighbours of every target, increasing, without itself.
std::vector<std::vector<i64>> neighbours(const Targets& t, bool rect, i64 nx, i64 ny) {
  const auto N = static_cast<std::size_t>(t.n);
  std::vector<std::vector<i64>> nb(N);
  if (rect) {
    const bool cyclic = detail::is_cyclic(t.lon, nx);
    for (i64 j = 0; j < ny; ++j)
      for (i64 i = 0; i < nx; ++i) {
        auto& v = nb[static_cast<std::size_t>(j * nx + i)];
        if (i > 0) v.push_back(j * nx + i - 1);
        else if (cyclic && nx > 2) v.push_back(j * nx + nx - 1);
        if (i < nx - 1) v.push_back(j * nx + i + 1);
        else if (cyclic && nx > 2) v.push_back(j * nx);
        if (j > 0) v.push_back((j - 1) * nx + i);
        if (j < ny - 1) v.push_back((j + 1) * nx + i);
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
      }
    return nb;
  }
  // Cells sharing a corner: corners keyed by their unit vector rounded to 1e-9.
  const auto nc = static_cast<std::size_t>(t.ncorner);
  std::map<std::array<long long, 3>, std::vector<i64>> at;
  for (std::size_t u = 0; u < N; ++u) {
    if (!t.held[u]) continue;
    for (std::size_t c = 0; c < nc; ++c) {
      const auto v = sphere::unit_vector(t.clon[u * nc + c], t.clat[u * nc + c]);
      const std::array<long long, 3> key = {std::llround(v.x * 1e9), std::llround(v.y * 1e9), std::llround(v.z * 1e9)};
      auto& cells = at[key];
      if (cells.empty() || cells.back() != static_cast<i64>(u)) cells.push_back(static_cast<i64>(u));
    }
  }
  for (const auto& [key, cells] : at)
    for (i64 a : cells)
      for (i64 b : cells)
        if (a != b) nb[static_cast<std::size_t>(a)].push_back(b);
  for (auto& v : nb) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return nb;
}

using Row = std::vector<std::pair<i64, double>>;

}  // namespace

void creep_fill(const Grid& dst, MPI_Comm comm, Links& links, int steps) {
  std::vector<char> has(static_cast<std::size_t>(dst.size()), 0);
  Targets t;
  bool rect = true;
  i64 nx = 0, ny = 0;
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
    i64 v[3] = {dst.size() > 0 && !(dst.dims.size() == 2 && dst.dims[0] * dst.dims[1] == dst.global_size) ? 1 : 0,
                dst.size() > 0 && dst.dims.size() == 2 ? dst.dims[0] : 0,
                dst.size() > 0 && dst.dims.size() == 2 ? dst.dims[1] : 0};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    rect = v[0] == 0;
    nx = v[1], ny = v[2];
    t = gather_targets(dst, has, comm);
    if (!rect && t.ncorner < 3)
      throw Error("creep fill on target grid " + dst.name + " needs its cell corners (it is not two-dimensional)",
                  "creep_fill", "give the target grid's corners, or dims {nx, ny}");
  });
  const auto nb = neighbours(t, rect, nx, ny);
  const auto N = static_cast<std::size_t>(t.n);
  // Which targets each step fills, from the flags alone (the same on every rank).
  std::vector<std::vector<i64>> waves;
  std::vector<char> filled = t.filled;
  for (int s = 0; steps < 0 || s < steps; ++s) {
    std::vector<i64> wave;
    for (std::size_t u = 0; u < N; ++u) {
      if (!t.held[u] || !t.valid[u] || filled[u]) continue;
      for (i64 b : nb[u])
        if (filled[static_cast<std::size_t>(b)]) {
          wave.push_back(static_cast<i64>(u));
          break;
        }
    }
    if (wave.empty()) break;
    for (i64 u : wave) filled[static_cast<std::size_t>(u)] = 1;
    waves.push_back(std::move(wave));
  }
  // The rows of the already-filled targets that creep reads, from their first holder.
  std::vector<char> need(N, 0);
  for (const auto& wave : waves)
    for (i64 u : wave)
      for (i64 b : nb[static_cast<std::size_t>(u)])
        if (t.filled[static_cast<std::size_t>(b)]) need[static_cast<std::size_t>(b)] = 1;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::vector<i64> ids;
  std::vector<double> ws;
  for (std::size_t l = 0; l < links.row.size(); ++l) {
    const auto r = static_cast<std::size_t>(links.row[l]);
    if (need[r] && t.owner[r] == me) {
      ids.push_back(links.row[l]);
      ids.push_back(links.col[l]);
      ws.push_back(links.weight[l]);
    }
  }
  std::vector<i64> all_ids;
  std::vector<double> all_ws;
  detail::agree(comm, [&] {
    all_ids = allgatherv(ids, MPI_INT64_T, comm);
    all_ws = allgatherv(ws, MPI_DOUBLE, comm);
  });
  std::unordered_map<i64, Row> rows;
  for (std::size_t l = 0; l < all_ws.size(); ++l) rows[all_ids[2 * l]].emplace_back(all_ids[2 * l + 1], all_ws[l]);
  // Each wave's rows: the mean of the rows of its filled neighbours, in increasing index.
  filled = t.filled;
  for (const auto& wave : waves) {
    std::vector<std::pair<i64, Row>> made;
    for (i64 u : wave) {
      std::vector<i64> from;
      for (i64 b : nb[static_cast<std::size_t>(u)])
        if (filled[static_cast<std::size_t>(b)]) from.push_back(b);
      const double m = static_cast<double>(from.size());
      std::map<i64, double> acc;
      for (i64 b : from)
        for (const auto& [c, w] : rows[b]) acc[c] += w / m;
      made.emplace_back(u, Row(acc.begin(), acc.end()));
    }
    for (auto& [u, row] : made) {
      filled[static_cast<std::size_t>(u)] = 1;
      rows[u] = std::move(row);
    }
  }
  std::vector<char> crept(N, 0);
  for (const auto& wave : waves)
    for (i64 u : wave) crept[static_cast<std::size_t>(u)] = 1;
  for (i64 k = 0; k < dst.size(); ++k) {
    const i64 gk = dst.global_index(k);
    if (!crept[static_cast<std::size_t>(gk)]) continue;
    for (const auto& [c, w] : rows[gk]) links.add(gk, c, w);
  }
}

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
  else if (name == "nearest") s.kind = K::nearest, s.nnn.n = 1;
  else if (name == "creep") s.kind = K::creep;
  else if (name == "fixed") s.kind = K::fixed;
  else
    throw Error("unknown interpolation stage '" + name_in + "'", where,
                "use conservative, bilinear, bicubic, distance, gaussian, average, nnn, nearest, creep or fixed");
  bool have_value = false;
  for (const auto& [key_in, value_in] : params) {
    const std::string key = lower(key_in), value = lower(value_in);
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
    } else if ((s.kind == K::nnn || s.kind == K::nearest) && key == "max_search_distance") {
      s.nnn.max_search_distance = as_double();
      if (s.nnn.max_search_distance < 0 || s.nnn.max_search_distance > 180)
        throw Error(bad + " is not in [0, 180] degrees", where);
    } else if (s.kind == K::creep && key == "steps") {
      s.creep_steps = value == "-1" ? -1 : as_int(1);
    } else if (s.kind == K::fixed && key == "value") {
      s.fixed_value = as_double();
      have_value = true;
    } else {
      throw Error("stage " + name + " has no parameter '" + key_in + "'", where, "see docs/configuration.md, interpolation");
    }
  }
  if (s.kind == K::fixed && !have_value) throw Error("stage fixed needs a value", where, "e.g. fixed value=-999");
  if (s.kind == K::nnn && s.nnn.n < 2 && s.nnn.weighting != NnnWeighting::average)
    throw Error("nnn weighting " + std::string(s.nnn.weighting == NnnWeighting::distance ? "distance"
                                               : s.nnn.weighting == NnnWeighting::gauss  ? "gauss"
                                                                                          : "rbf") +
                    " needs n >= 2 (YAC's rule)",
                where);
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
        break;
      case K::bilinear:
      case K::bicubic: out += s.bilinear.extrapolate ? " extrapolate=true" : " extrapolate=false"; break;
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
    i64 count = 0;
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
        case K::conservative: l = conservative_weights(src, sub, comm, st.conservative).links; break;
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
