// bench/sim --config: each coupling of a namcouple (or YAML) with its grids, weights and the
// components' partitions, as the coupler would set it up, replayed at any rank count in this one
// process: the Remap's exchanges from sim::remap_flows (Remap's own routing, without the
// ranks), then simulated with P2P, the butterfly and the adaptive search, for mapping at the
// source and at the destination. Components and partition kinds as `estuary inspect schedule
// --config` takes them (python/estuary/cli/inspect_config.py), so the two describe one set-up.
#include "sim_config.hpp"

#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "bench_util.hpp"
#include "couple/coupling_weights.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/grid_files.hpp"
#include "estuary/weights.hpp"

namespace bench {
namespace {

using estuary::Decomp;
using estuary::Error;
using i64 = std::int64_t;
namespace sim = estuary::sim;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Component {
  std::string name, kind;
  int ranks = 1;
  std::vector<std::string> grids;
};

struct GridInfo {
  std::string recipe;
  i64 n = -1, nx = 0, ny = 0;
};

// NAME:RANKS:KIND[:GRID[=RECIPE],...]; a recipe may hold colons (tripolar:1442x1021).
Component parse_component(const std::string& spec, std::map<std::string, GridInfo>& grids) {
  const std::string form = "NAME:RANKS:KIND[:GRID[=RECIPE],...], e.g. ocn:10000:apple:torc=orca025";
  std::vector<std::string> f;
  std::size_t at = 0;
  for (int k = 0; k < 3; ++k) {
    const std::size_t c = spec.find(':', at);
    f.push_back(spec.substr(at, c == std::string::npos ? std::string::npos : c - at));
    at = c == std::string::npos ? spec.size() + 1 : c + 1;
  }
  if (f[0].empty() || f[2].empty()) throw Error("--component " + spec + " is not " + form, "bench/sim --config");
  Component c;
  c.name = f[0];
  static const std::map<std::string, std::string> alias{{"round-robin", "points"}, {"cyclic", "points"}, {"block", "apple"}};
  c.kind = alias.count(f[2]) ? alias.at(f[2]) : f[2];
  if (c.kind != "serial" && c.kind != "apple" && c.kind != "box" && c.kind != "orange" && c.kind != "points")
    throw Error("partition kind '" + f[2] + "' of --component " + spec, "bench/sim --config",
                "use serial, apple, box, orange or points");
  try {
    c.ranks = static_cast<int>(std::stod(f[1]));
  } catch (const std::exception&) {
    c.ranks = 0;
  }
  if (c.ranks < 1) throw Error("rank count '" + f[1] + "' of --component " + spec, "bench/sim --config", "give a count >= 1");
  std::string rest = at <= spec.size() ? spec.substr(at) : "";
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string g = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (g.empty()) continue;
    const std::size_t eq = g.find('=');
    const std::string name = g.substr(0, eq);
    c.grids.push_back(name);
    if (eq != std::string::npos) grids[name].recipe = g.substr(eq + 1);
  }
  return c;
}

// The most square px x py = ranks with px dividing ranks (inspect_config.box_shape).
std::pair<i64, i64> box_shape(i64 ranks, i64 nx, i64 ny) {
  double best = -1;
  i64 bx = 1;
  for (i64 px = 1; px <= ranks; ++px) {
    if (ranks % px) continue;
    const double score = std::abs(static_cast<double>(nx) / px - static_cast<double>(ny) / (ranks / px));
    if (best < 0 || score < best - 1e-12) best = score, bx = px;
  }
  return {bx, ranks / bx};
}

// Rank r of `ranks` of a component's partition (as inspect_config.partition).
Decomp partition(const std::string& kind, const GridInfo& g, i64 r, i64 ranks) {
  const i64 n = g.n;
  if (kind == "serial") return r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n);
  if (kind == "apple") return estuary::gen::block(n, static_cast<int>(r), static_cast<int>(ranks));
  if (kind == "points") return estuary::gen::cyclic(n, static_cast<int>(r), static_cast<int>(ranks));
  if (kind == "box") {
    const auto [px, py] = box_shape(ranks, g.nx, g.ny);
    const i64 i = r % px, j = r / px;
    const i64 x0 = i * g.nx / px, x1 = (i + 1) * g.nx / px, y0 = j * g.ny / py, y1 = (j + 1) * g.ny / py;
    return Decomp::box({g.ny, g.nx}, {y0, x0}, {y1 - y0, x1 - x0});
  }
  // orange: segments of one grid row (a 1-D grid: n / (4 ranks) points), dealt round-robin
  const i64 seg = g.ny > 1 ? g.nx : std::max<i64>(1, (n + 4 * ranks - 1) / (4 * ranks));
  std::vector<estuary::Stripe> s;
  for (i64 k = r; k * seg < n; k += ranks) s.push_back({k * seg, std::min(seg, n - k * seg), 1});
  return Decomp::stripes(n, std::move(s));
}

// One coupling as the coupler sets it up: its two sides and its links (global).
struct Coupling {
  std::string label, origin, weights;  // weights: where the links came from
  int src = -1, dst = -1;              // components
  std::string src_grid, dst_grid;
  int fields = 1;
  estuary::RemapOrder order = estuary::RemapOrder::bfb;
  std::vector<i64> rows, cols;
  double weights_s = 0;
};

estuary::Grid full_grid(const std::string& name, const GridInfo& g, const ConfigRun& run,
                        const estuary::CouplingConfig& cfg) {
  estuary::Grid out;
  if (!g.recipe.empty()) {
    out = estuary::GridGen::from_name(g.recipe).make();
  } else {
    // No recipe: the run folder's OASIS grid files, as the coupler reads them without def_grid.
    estuary::GridFileNeeds needs;
    needs.mask = true;
    needs.corners = estuary::detail::weights_need_corners(cfg);
    needs.area = static_cast<bool>(cfg.conserv);
    needs.context = "bench/sim --config, grid " + name;
    out = estuary::read_oasis_grid(estuary::OasisGridFiles::in(run.rundir), name, Decomp::stripes(g.n, {{0, g.n, 1}}),
                                   MPI_COMM_SELF, needs);
  }
  out.global_size = g.n;
  return out;
}

std::string path_in(const std::string& dir, const std::string& file) {
  return std::filesystem::path(file).is_absolute() ? file : (std::filesystem::path(dir) / file).string();
}

// The links of a coupling: its MAPPING file, weights generated as the coupler generates them
// (SCRIPR, STACK; cached in the work folder under OASIS's names), or the identity.
void coupling_links(Coupling& c, const estuary::CouplingConfig& cfg, std::map<std::string, GridInfo>& grids,
                    const ConfigRun& run) {
  const auto t0 = std::chrono::steady_clock::now();
  const GridInfo &sg = grids.at(c.src_grid), &dg = grids.at(c.dst_grid);
  estuary::Links links;
  if (cfg.mapping) {
    estuary::WeightReadOptions ro;
    ro.src_size = sg.n, ro.dst_size = dg.n;
    links = estuary::read_weights(path_in(run.rundir, cfg.mapping->file), MPI_COMM_SELF, ro).links;
    c.weights = "MAPPING " + cfg.mapping->file;
  } else if (cfg.scripr || !cfg.interpolation.empty()) {
    if (cfg.scripr && cfg.scripr->method == "CALLBACK")
      throw Error("coupling " + c.label + " has SCRIPR CALLBACK (weights from the model)", "bench/sim --config",
                  "give the weights as a MAPPING file");
    estuary::detail::WeightContext wc;
    wc.directory = run.workdir.empty() ? run.rundir : run.workdir;
    wc.label = c.label;
    wc.here = "bench/sim --config, " + c.label;
    wc.src_global = sg.n;
    wc.dst_global = dg.n;
    wc.log = [](const std::string& line) { std::cerr << "bench/sim: " << line << "\n"; };
    estuary::detail::CouplingWeights w = estuary::detail::coupling_weights(
        cfg, full_grid(c.src_grid, sg, run, cfg), full_grid(c.dst_grid, dg, run, cfg), MPI_COMM_SELF, wc);
    if (!w.weight_file.empty()) {
      estuary::WeightReadOptions ro;
      ro.src_size = sg.n, ro.dst_size = dg.n;
      links = estuary::read_weights(w.weight_file, MPI_COMM_SELF, ro).links;
    } else {
      links = std::move(w.links);
    }
    c.weights = cfg.scripr ? "SCRIPR " + cfg.scripr->method : "STACK";
  } else {
    if (sg.n != dg.n)
      throw Error("coupling " + c.label + " maps " + std::to_string(sg.n) + " points to " + std::to_string(dg.n) +
                      " with no mapping",
                  "bench/sim --config", "add MAPPING or SCRIPR to the coupling");
    for (i64 i = 0; i < sg.n; ++i) links.add(i, i, 1.0);
    c.weights = "identity";
  }
  c.rows = std::move(links.row);
  c.cols = std::move(links.col);
  c.weights_s = seconds_since(t0);
}

// The exchanges, one after the other: each replayed on its own (the product sits between them),
// times added. Returns the record of one (location, algorithm). As the coupler runs them
// (RemapOptions::split_phase): the exchange between the components is P2P whatever `algo`
// says; the one within a component (`side`: its ranks, sorted; empty for the crossing one) is
// `algo` over that component's ranks alone, renumbered from 0 — replayed on the platform's first
// hosts, which are its own for the first component and alike on these regular machines.
nlohmann::ordered_json replay(const std::vector<sim::RemapExchangeFlows>& exchanges, int ranks, i64 bytes_per_element,
                              const std::string& algo, const sim::Platform& pl, const ConfigRun& run,
                              const std::string& name, const std::function<std::vector<int>(const std::string&)>& side) {
  nlohmann::ordered_json rec = {{"algorithm", algo}};
  double t = 0, wall = 0, rss = 0, alpha_beta = 0;
  i64 messages = 0, bytes = 0;
  int stages = 0;
  nlohmann::ordered_json ex = nlohmann::ordered_json::array();
  for (const sim::RemapExchangeFlows& crossing_or_side : exchanges) {
    i64 elements = 0;
    for (const auto& f : crossing_or_side.flows) elements += f.count;
    nlohmann::ordered_json je = {{"name", crossing_or_side.name}, {"flows", crossing_or_side.flows.size()},
                                 {"bytes", elements * bytes_per_element}};
    const std::vector<int> members = algo == "p2p" || algo == "none" ? std::vector<int>{} : side(crossing_or_side.name);
    const bool staged = !members.empty();
    sim::RemapExchangeFlows e = crossing_or_side;
    int n = ranks;
    if (staged) {  // the side's ranks renumbered 0 .. members.size() - 1
      n = static_cast<int>(members.size());
      const auto index = [&](int r) {
        return static_cast<int>(std::lower_bound(members.begin(), members.end(), r) - members.begin());
      };
      for (auto& f : e.flows) f.from = index(f.from), f.to = index(f.to);
      je["over_ranks"] = n;
    }
    const std::string run_algo = staged ? algo : algo == "none" ? "none" : "p2p";
    je["algorithm"] = run_algo;
    std::unique_ptr<sim::Pattern> plain;
    if (!e.flows.empty()) {
      // The contention-free estimate (alpha = two link latencies, each stage the busiest rank's
      // bytes over a link's bandwidth), without SimGrid: at any scale in seconds.
      const std::string what = name + " " + e.name;
      plain = run_algo == "butterfly" ? sim::butterfly_pattern(what + " butterfly", n, e.flows, 0, bytes_per_element)
                                      : sim::p2p_pattern(what + " p2p", n, e.flows, bytes_per_element);
      // With several ranks a host, the hosts' pattern (what is replayed): intra-host messages
      // free, a host's ranks sharing its port.
      const int k = run.options.ranks_per_host;
      const double ab = sim::alpha_beta_s(k > 1 ? *sim::per_host(*plain, k) : *plain, 2 * pl.latency_s,
                                          pl.bandwidth_Bps);
      je["alpha_beta_s"] = ab;
      alpha_beta += ab;
    }
    if (algo != "none" && !e.flows.empty()) {
      sim::SimResult r;
      const std::string what = name + " " + e.name;
      if (run_algo == "adaptive") {
        const sim::CouplingChoice c = sim::butterfly_adaptive(pl, what, n, e.flows, bytes_per_element, run.options);
        r = c.result;
        je["choice"] = c.name;
        je["trials"] = c.trials.size();
        je["profiling_s"] = c.profiling_s;
      } else {
        r = sim::simulate(pl, *plain, run.options);
      }
      je["simulated_s"] = r.simulated_s;
      je["stages"] = r.stages;
      je["messages"] = r.messages;
      je["maxmin_precision"] = r.maxmin_precision;
      t += r.simulated_s;
      wall += r.wall_build_s + r.wall_run_s;
      rss = std::max(rss, r.peak_rss_mb);
      messages += r.messages;
      bytes += r.bytes;
      stages += r.stages;
    }
    ex.push_back(je);
  }
  if (algo != "none") rec["simulated_s"] = t;
  rec["alpha_beta_s"] = alpha_beta;
  rec["stages"] = stages;
  rec["messages"] = messages;
  rec["bytes"] = bytes;
  rec["wall_s"] = wall;
  rec["peak_rss_mb"] = rss;
  rec["exchanges"] = ex;
  return rec;
}

// The bytes each rank sends each rank over the exchanges (the flows: what P2P sends), summed
// into bins x bins blocks of consecutive ranks.
nlohmann::ordered_json flow_matrix(const std::vector<sim::RemapExchangeFlows>& exchanges, int ranks, i64 bins,
                                   i64 bytes_per_element) {
  bins = std::max<i64>(1, std::min<i64>(bins, ranks));
  std::vector<std::vector<double>> m(static_cast<std::size_t>(bins), std::vector<double>(static_cast<std::size_t>(bins)));
  auto bin = [&](int r) { return static_cast<std::size_t>(static_cast<i64>(r) * bins / ranks); };
  for (const auto& e : exchanges)
    for (const auto& f : e.flows) m[bin(f.from)][bin(f.to)] += static_cast<double>(f.count * bytes_per_element);
  return m;
}

}  // namespace

int simulate_config(const ConfigRun& run, int* argc, char*** argv) {
  const auto t_all = std::chrono::steady_clock::now();
  std::map<std::string, GridInfo> grids;
  std::vector<Component> comps;
  std::vector<Coupling> couplings;
  int failures = 0;
  MPI_Init(argc, argv);
  try {
    for (const std::string& s : run.components) comps.push_back(parse_component(s, grids));
    for (const std::string& g : run.grids) {
      const std::size_t eq = g.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("--grid " + g + " is not NAME=RECIPE", "bench/sim --config", "e.g. --grid torc=orca025");
      grids[g.substr(0, eq)].recipe = g.substr(eq + 1);
    }
    if (comps.empty())
      throw Error("no --component given", "bench/sim --config", "give --component NAME:RANKS:KIND[:GRID,...] for each");
    const estuary::CouplingSetup setup = estuary::read_coupling_config(run.config);
    auto comp_of = [&](const std::string& named, const std::string& grid, const std::string& label) {
      for (std::size_t k = 0; k < comps.size(); ++k)
        if (named.empty() ? std::count(comps[k].grids.begin(), comps[k].grids.end(), grid) > 0 : comps[k].name == named)
          return static_cast<int>(k);
      throw Error("grid " + grid + " of coupling " + label + " belongs to no --component", "bench/sim --config",
                  "name it in the component's option, e.g. --component NAME:RANKS:KIND:" + grid);
    };
    for (const estuary::CouplingConfig& cfg : setup.couplings) {
      if (cfg.status == estuary::FieldStatus::input || cfg.status == estuary::FieldStatus::output) continue;
      Coupling c;
      std::string src_names, dst_names;
      for (const auto& f : cfg.src_fields) src_names += (src_names.empty() ? "" : ":") + f;
      for (const auto& f : cfg.dst_fields) dst_names += (dst_names.empty() ? "" : ":") + f;
      c.label = src_names;
      c.label.append(" -> ").append(dst_names).append(" (").append(cfg.origin).append(")");
      c.origin = cfg.origin;
      c.src_grid = cfg.src_grid.name;
      c.dst_grid = cfg.dst_grid.name;
      c.src = comp_of(cfg.src_component, c.src_grid, c.label);
      c.dst = comp_of(cfg.dst_component, c.dst_grid, c.label);
      c.fields = static_cast<int>(cfg.src_fields.size());
      if (cfg.mapping) c.order = cfg.mapping->order;
      // Grid sizes: the recipe, else the configuration's nx x ny, else the weight file's.
      for (const auto& [name, ref] : {std::pair{c.src_grid, cfg.src_grid}, std::pair{c.dst_grid, cfg.dst_grid}}) {
        GridInfo& g = grids[name];
        if (g.n < 0 && !g.recipe.empty()) {
          const estuary::GridGen gen = estuary::GridGen::from_name(g.recipe);
          g.n = gen.size();
          if (gen.dims().size() == 2) g.nx = gen.dims()[0], g.ny = gen.dims()[1];
        }
        if (g.n < 0 && ref.nx > 0 && ref.ny > 0) g.n = ref.nx * ref.ny, g.nx = ref.nx, g.ny = ref.ny;
      }
      if (cfg.mapping && (grids[c.src_grid].n < 0 || grids[c.dst_grid].n < 0)) {
        const estuary::WeightFileInfo info =
            estuary::read_weights(path_in(run.rundir, cfg.mapping->file), MPI_COMM_SELF).info;
        if (grids[c.src_grid].n < 0) grids[c.src_grid].n = info.src_size;
        if (grids[c.dst_grid].n < 0) grids[c.dst_grid].n = info.dst_size;
      }
      for (const std::string& name : {c.src_grid, c.dst_grid}) {
        GridInfo& g = grids[name];
        if (g.n < 0)
          throw Error("the size of grid " + name + " is unknown", "bench/sim --config, coupling " + c.label,
                      "give it a recipe (--component NAME:RANKS:KIND:" + name + "=RECIPE or --grid " + name +
                          "=RECIPE), or nx ny in the configuration");
        if (!g.nx || !g.ny) estuary::gen::grid_shape(g.n, g.nx, g.ny);
      }
      coupling_links(c, cfg, grids, run);
      couplings.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    Json j;
    j.add("bench", "sim").add("pattern", "remap").add("config", run.config).add("error", std::string(e.what()));
    std::cout << j.str() << std::endl;
    MPI_Finalize();
    return 1;
  }
  // The replays fork SimGrid children: MPI is done with first, and the weight generators' freed
  // memory is given back (a child starts with this process's pages).
  MPI_Finalize();
  malloc_trim(0);
  const double setup_s = seconds_since(t_all);
  i64 given = 0;
  for (const Component& c : comps) given += c.ranks;
  const std::vector<i64> totals = run.totals.empty() ? std::vector<i64>{given} : run.totals;
  for (i64 total : totals) {
    // Components scaled to the total (world ranks in the order of the options).
    std::vector<i64> ranks(comps.size()), first(comps.size());
    i64 at = 0;
    for (std::size_t k = 0; k < comps.size(); ++k) {
      ranks[k] = std::max<i64>(1, std::llround(static_cast<double>(comps[k].ranks) * total / given));
      first[k] = at;
      at += ranks[k];
    }
    for (const Coupling& c : couplings) {
      Json j;
      j.add("bench", "sim").add("pattern", "remap").add("coupling", c.label).add("config", run.config);
      try {
        // The coupling's communicator: the world ranks of both components, in world order.
        std::vector<i64> members;
        for (int k : {c.src, c.dst})
          for (i64 w = first[static_cast<std::size_t>(k)]; w < first[static_cast<std::size_t>(k)] + ranks[static_cast<std::size_t>(k)]; ++w)
            members.push_back(w);
        std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        const int P = static_cast<int>(members.size());
        auto side = [&](int k, const std::string& grid) {
          const GridInfo& g = grids.at(grid);
          const std::string& kind = comps[static_cast<std::size_t>(k)].kind;
          const i64 f = first[static_cast<std::size_t>(k)], n = ranks[static_cast<std::size_t>(k)];
          return [&members, &g, f, n, kind](int q) {
            const i64 w = members[static_cast<std::size_t>(q)];
            return w >= f && w < f + n ? partition(kind, g, w - f, n) : Decomp::empty(g.n);
          };
        };
        const std::function<Decomp(int)> src = side(c.src, c.src_grid), dst = side(c.dst, c.dst_grid);
        const sim::Platform pl = run.platform(P);
        const i64 eb = 8 * i64{c.fields};
        j.add("origin", c.origin).add("src_component", comps[static_cast<std::size_t>(c.src)].name);
        j.add("dst_component", comps[static_cast<std::size_t>(c.dst)].name);
        j.add("src_grid", nlohmann::ordered_json{{"name", c.src_grid}, {"n", grids.at(c.src_grid).n}});
        j.add("dst_grid", nlohmann::ordered_json{{"name", c.dst_grid}, {"n", grids.at(c.dst_grid).n}});
        j.add("src_ranks", ranks[static_cast<std::size_t>(c.src)]).add("dst_ranks", ranks[static_cast<std::size_t>(c.dst)]);
        j.add("ranks", P).add("ranks_per_host", run.options.ranks_per_host).add("platform", pl.describe()).add("weights", c.weights).add("links", c.rows.size());
        j.add("weights_s", c.weights_s).add("fields", c.fields).add("bytes_per_element", eb);
        nlohmann::ordered_json options = nlohmann::ordered_json::array(), best, matrices;
        double flows_s = 0;
        for (const std::string& loc : run.locations) {
          estuary::RemapOptions ro;
          ro.location = estuary::from_name<estuary::RemapLocation>(loc);
          ro.order = c.order;
          const auto t0 = std::chrono::steady_clock::now();
          const std::vector<sim::RemapExchangeFlows> ex = sim::remap_flows(P, src, dst, c.rows, c.cols, ro);
          flows_s += seconds_since(t0);
          if (run.matrix_bins > 0) matrices[loc] = flow_matrix(ex, P, run.matrix_bins, eb);
          for (const std::string& algo : run.algos) {
            // The exchange within one component: bfb at src, the gather among the source ranks; sum at
            // dst, the partial sums among the destination ranks (Remap's split_phase).
            const auto within = [&](const std::string& exchange) {
              const bool gather = ro.location == estuary::RemapLocation::src && ro.order == estuary::RemapOrder::bfb;
              const bool after = ro.location == estuary::RemapLocation::dst && ro.order == estuary::RemapOrder::sum;
              std::vector<int> members;
              if ((gather && exchange == "gather") || (after && exchange == "after"))
                for (int q = 0; q < P; ++q)
                  if ((gather ? src(q) : dst(q)).size() > 0) members.push_back(q);
              return members;
            };
            nlohmann::ordered_json rec = replay(ex, P, eb, algo, pl, run, c.label + " " + loc, within);
            nlohmann::ordered_json o = {{"location", loc}, {"order", estuary::name_of(c.order)}};
            for (auto it = rec.begin(); it != rec.end(); ++it) o[it.key()] = it.value();
            if (algo != "none" &&
                (best.is_null() || o["simulated_s"].get<double>() < best["simulated_s"].get<double>()))
              best = {{"location", loc}, {"algorithm", algo}, {"simulated_s", o["simulated_s"]}};
            options.push_back(o);
          }
        }
        j.add("options", options).add("best", best);
        if (run.matrix_bins > 0) j.add("matrix_bytes", matrices);
        j.add("remap_flows_s", flows_s).add("setup_s", setup_s);
        j.add("host_peak_rss_mb", proc_status_mb("VmHWM"));
      } catch (const std::exception& e) {
        ++failures;
        j.add("ranks", total).add("error", std::string(e.what()));
      }
      std::cout << j.str() << std::endl;
    }
  }
  return failures;
}

}  // namespace bench
