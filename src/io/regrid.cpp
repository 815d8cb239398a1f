// Output on another grid (io/regrid.hpp): the `grid:` of a file, the target grids, the weights
// (estuary's generators, cached as the coupler caches SCRIPR CONSERV's) and the Remaps.
#include "io/regrid.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <utility>

#include "common/mpi_util.hpp"
#include "config/yaml_file.hpp"
#include "estuary/grid_files.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"
#include "io/output_impl.hpp"
#include "remap/weight_cache.hpp"

namespace estuary::io {


const char* name_of(RegridConfig::Method m) {
  switch (m) {
    case RegridConfig::Method::conservative: return "conservative";
    case RegridConfig::Method::bilinear: return "bilinear";
    case RegridConfig::Method::bicubic: return "bicubic";
    case RegridConfig::Method::distwgt: return "distwgt";
    case RegridConfig::Method::nn: return "nn";
  }
  return "?";
}

namespace {

// The target grid alone, as text: what files share a GridInfo by.
std::string target_text(const RegridConfig& g) {
  std::string t;
  if (g.target == RegridConfig::Target::recipe) return g.grid;
  t.append(g.target == RegridConfig::Target::scrip ? "scrip:" : "oasis:").append(g.grid);
  if (!g.name.empty()) t.append("#").append(g.name);
  return t;
}

}  // namespace

std::string RegridConfig::describe() const {
  std::string t = target_text(*this);
  t.append(" ").append(name_of(method));
  if (method == Method::conservative)
    t.append(" order=").append(std::to_string(order)).append(destarea ? " destarea" : "");
  if (method == Method::distwgt) t.append(" n=").append(std::to_string(neighbors));
  return t;
}

std::string regridded_name(const std::string& field, const RegridConfig& g) {
  std::string n = field;
  return n.append("@").append(g.describe());
}

void rename_fields(OutputConfig& c) {
  for (FileConfig& f : c.files) {
    if (!f.grid) continue;
    for (FieldConfig& fd : f.fields) {
      if (!fd.expr.empty())
        throw Error("derived field '" + fd.name + "' in file " + f.name +
                        ", which is written on another grid: not supported yet",
                    fd.origin.empty() ? "config " + c.source + ", file " + f.name : fd.origin,
                    "write the derived field to a file on the model's grid, or remove the file's grid");
      if (fd.output_name.empty()) fd.output_name = fd.name;
      fd.name = regridded_name(fd.name, f.grid);
    }
  }
}

RegridConfig parse_regrid(const estuary::detail::config::YamlFile& doc, const YAML::Node& n, const std::string& key) {
  RegridConfig g;
  g.origin = doc.where(n, key);
  if (!n.IsMap()) doc.fail(n, key, "`grid` must be a map", "write grid: {target: \"lonlat:144x72\", method: conservative}");
  doc.keys(n, key, {"target", "method", "order", "normalization", "neighbors", "weights"});
  const YAML::Node t = doc.required(n, "target", key);
  const std::string tk = key + ".target";
  if (t.IsScalar()) {
    g.target = RegridConfig::Target::recipe;
    g.grid = doc.scalar(t, tk);
    try {
      (void)GridGen::from_name(g.grid);  // the recipe's form, checked now
    } catch (const Error& e) {
      doc.fail(t, tk, e.fault(), e.fix());
    }
  } else if (t.IsMap()) {
    doc.keys(t, tk, {"scrip", "oasis", "name"});
    if (static_cast<bool>(t["scrip"]) == static_cast<bool>(t["oasis"]))
      doc.fail(t, tk, "a target file needs exactly one of scrip: or oasis:",
               "write target: {scrip: grid.nc} or target: {oasis: grids.nc, name: GRID}");
    const bool scrip = static_cast<bool>(t["scrip"]);
    g.target = scrip ? RegridConfig::Target::scrip : RegridConfig::Target::oasis;
    g.grid = doc.scalar(t[scrip ? "scrip" : "oasis"], tk + (scrip ? ".scrip" : ".oasis"));
    if (g.grid.empty()) doc.fail(t, tk, "the target's file name is empty");
    if (const YAML::Node nm = t["name"]) g.name = doc.scalar(nm, tk + ".name");
  } else {
    doc.fail(t, tk, "`target` must be a grid recipe or a map",
             "write \"lonlat:144x72\" (a recipe), {scrip: grid.nc} or {oasis: grids.nc, name: GRID}");
  }
  if (const YAML::Node m = n["method"]) {
    const std::string s = doc.scalar(m, key + ".method");
    bool found = false;
    for (auto k : {RegridConfig::Method::conservative, RegridConfig::Method::bilinear, RegridConfig::Method::bicubic,
                   RegridConfig::Method::distwgt, RegridConfig::Method::nn})
      if (s == name_of(k)) {
        g.method = k;
        found = true;
      }
    if (!found)
      doc.fail(m, key + ".method", "unknown method '" + s + "'", "use conservative, bilinear, bicubic, distwgt or nn");
  }
  if (const YAML::Node o = n["order"]) {
    g.order = static_cast<int>(doc.integer(o, key + ".order", 1, 2));
    if (g.method != RegridConfig::Method::conservative)
      doc.fail(o, key + ".order", "order goes with method conservative only");
  }
  if (const YAML::Node o = n["normalization"]) {
    const std::string v = doc.scalar(o, key + ".normalization");
    if (v != "fracarea" && v != "destarea")
      doc.fail(o, key + ".normalization", "unknown normalization '" + v + "'", "use fracarea or destarea");
    if (g.method != RegridConfig::Method::conservative)
      doc.fail(o, key + ".normalization", "normalization goes with method conservative only");
    g.destarea = v == "destarea";
  }
  if (const YAML::Node o = n["neighbors"]) {
    g.neighbors = static_cast<int>(doc.integer(o, key + ".neighbors", 1, 64));
    if (g.method != RegridConfig::Method::distwgt)
      doc.fail(o, key + ".neighbors", "neighbors goes with method distwgt only");
  }
  if (const YAML::Node w = n["weights"]) {
    g.weights = doc.scalar(w, key + ".weights");
    if (g.weights.empty()) doc.fail(w, key + ".weights", "the weight file's name is empty");
  }
  return g;
}

struct Regrids::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  // One remapping of one source field to one file grid.
  struct Job {
    int out = -1;                              // the remapped FieldInfo
    int remap = -1;
    std::vector<std::vector<std::size_t>> pos;  // per level: local index of each 2-D source point
    std::vector<std::vector<double>> in;        // per level: the source values in 2-D order
    std::vector<double> outbuf;                 // levels one after the other, the target block each
    i64 nb = 0;                                 // target points in this rank's block
  };
  std::vector<Job> jobs;
  std::map<int, std::vector<int>> by_field;
  std::vector<std::unique_ptr<Remap>> remaps;
  double seconds = 0;
};

Regrids::Regrids() : impl_(std::make_unique<Impl>()) {}
Regrids::~Regrids() = default;
bool Regrids::empty() const { return impl_->jobs.empty(); }
double Regrids::seconds() const { return impl_->seconds; }

namespace {

// The model's share of a grid as def_grid gave it, as the generators take it.
Grid grid_of(const GridInfo& g) {
  Grid s;
  s.kind = g.kind;
  s.name = g.name;
  s.dims = g.dims;
  s.global_size = g.global_size;
  s.points = g.points;
  s.lon = g.lon;
  s.lat = g.lat;
  s.ncorner = g.ncorner;
  s.corner_lon = g.clon;
  s.corner_lat = g.clat;
  s.mask = g.mask;
  return s;
}

// An error of a generator or a reader, re-thrown at the configuration's place.
template <class F>
auto at_config(const RegridConfig& g, const std::string& what, F&& f) {
  try {
    return f();
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {
    throw Error(what + ": " + e.fault(), g.origin + (e.where().empty() ? "" : ", " + e.where()), e.fix());
  }
}

// The weights of `g` from source `sg` to target `tg` (this rank's block of it), for tg's points.
Links generate(const RegridConfig& g, const Grid& sg, const Grid& tg, MPI_Comm comm, WeightWriteOptions& wo) {
  using M = RegridConfig::Method;
  const std::string what = std::string("weights ") + name_of(g.method) + " from grid " + sg.name;
  return at_config(g, what, [&] {
    switch (g.method) {
      case M::conservative: {
        ConservativeOptions co;
        co.order = g.order;
        // fracarea: a constant stays itself (CDO's default).
        co.normalization = g.destarea ? ConservNormalization::destarea : ConservNormalization::fracarea;
        wo.map_method = "Conservative remapping";
        wo.normalization = g.destarea ? "destarea" : "fracarea";
        return conservative_weights(sg, tg, comm, co).links;
      }
      case M::bilinear:
        wo.map_method = "Bilinear remapping";
        return bilinear_weights(sg, tg, comm);
      case M::bicubic:
        wo.map_method = "Bicubic remapping (gradients folded in)";
        return bicubic_weights(sg, tg, comm).links;
      case M::distwgt:
      case M::nn: {
        DistanceWeightOptions o;
        o.neighbors = g.method == M::nn ? 1 : g.neighbors;
        wo.map_method = g.method == M::nn ? "Nearest neighbor" : "Distance weighted avg of nearest neighbors";
        return distance_weights(sg, tg, comm, o);
      }
    }
    return Links{};
  });
}

}  // namespace

void Regrids::define(const OutputConfig& cfg, std::vector<GridInfo>& grids, std::vector<FieldInfo>& fields,
                     MPI_Comm comm, const std::function<void(const std::string&)>& log) {
  Impl& x = *impl_;
  x.comm = comm;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // What to remap: (source field, file grid), each once, in the configuration's order.
  struct Want {
    int field;
    const RegridConfig* g;
    std::string origin;
  };
  std::vector<Want> wants;
  std::map<std::string, bool> seen;
  for (const FileConfig& fc : cfg.files) {
    if (!fc.grid) continue;
    const std::string suffix = "@" + fc.grid.describe();
    for (const FieldConfig& fd : fc.fields) {
      if (!seen.emplace(fd.name, true).second) continue;
      const std::string src = fd.name.substr(0, fd.name.size() - suffix.size());
      auto it = std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& f) { return f.def.name == src; });
      if (it == fields.end())
        throw Error("field '" + src + "' is not declared by the model",
                    fd.origin.empty() ? "config " + cfg.source + ", file " + fc.name : fd.origin,
                    "declare it with def_field or remove it from the file");
      wants.push_back({static_cast<int>(it - fields.begin()), &fc.grid, fd.origin});
    }
  }
  // Per field: its grid, and for each level the local positions of the 2-D points (checked on
  // each rank alone, agreed before any collective).
  std::vector<int> src_grid(wants.size());
  std::vector<std::vector<i64>> src_points(wants.size());
  std::vector<std::vector<std::vector<std::size_t>>> src_pos(wants.size());
  estuary::detail::agree(comm, [&] {
    for (std::size_t w = 0; w < wants.size(); ++w) {
      const FieldDef& def = fields[static_cast<std::size_t>(wants[w].field)].def;
      auto git = std::find_if(grids.begin(), grids.end(), [&](const GridInfo& g) { return g.name == def.grid; });
      if (git == grids.end())
        throw Error("field " + def.name + " names grid '" + def.grid + "', which was not defined",
                    "field " + def.name, "call def_grid before def_field");
      src_grid[w] = static_cast<int>(git - grids.begin());
      const i64 G = git->global_size;
      const i64 nlev = def.levels.empty() ? 1 : static_cast<i64>(def.levels.size());
      if (def.decomp.global_size() != nlev * G)
        throw Error("decomposition covers " + std::to_string(def.decomp.global_size()) +
                        " points, the grid times levels " + std::to_string(nlev * G),
                    "field " + def.name, "number the field as level * grid size + grid point");
      const std::vector<i64> idx = def.decomp.to_indices();
      std::unordered_map<i64, std::size_t> at;
      for (i64 v : idx)
        if (v < G && at.emplace(v, src_points[w].size()).second) src_points[w].push_back(v);
      const std::size_t np = src_points[w].size();
      constexpr std::size_t none = static_cast<std::size_t>(-1);
      src_pos[w].assign(static_cast<std::size_t>(nlev), std::vector<std::size_t>(np, none));
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const auto k = at.find(idx[i] % G);
        if (k != at.end()) src_pos[w][static_cast<std::size_t>(idx[i] / G)][k->second] = i;
      }
      for (const auto& lev : src_pos[w])
        if (idx.size() != np * static_cast<std::size_t>(nlev) ||
            std::find(lev.begin(), lev.end(), none) != lev.end())
          throw Error("the levels of field " + def.name + " do not hold the same points (each once) on " +
                          estuary::detail::world_rank_label() + ", which a file on another grid needs",
                      wants[w].origin, "decompose every level of the field alike");
    }
  });
  // Target grids, each once: this rank's block of the target's points.
  std::map<std::string, int> target_of;  // target text -> GridInfo index
  std::map<std::string, Grid> target_grid;
  for (const Want& w : wants) {
    const RegridConfig& g = *w.g;
    const std::string tt = target_text(g);
    if (target_of.count(tt)) continue;
    Grid tg;
    if (g.target == RegridConfig::Target::recipe) {
      const GridGen gen = at_config(g, "target grid", [&] { return GridGen::from_name(g.grid); });
      const i64 n = gen.size();
      tg = gen.make(Decomp::stripes(n, {{n * rank / size, n * (rank + 1) / size - n * rank / size, 1}}));
    } else {
      const GridFileInfo info = at_config(g, "target grid", [&] { return grid_file_info(g.grid, g.name); });
      const i64 n = info.size;
      const Decomp part = Decomp::stripes(n, {{n * rank / size, n * (rank + 1) / size - n * rank / size, 1}});
      GridFileNeeds needs;
      needs.corners = g.method == RegridConfig::Method::conservative;
      needs.context = "the grid of an output file (" + g.origin + ")";
      tg = at_config(g, "target grid", [&] { return read_grid_file(g.grid, g.name, part, comm, needs); });
      tg.name = info.name;
    }
    target_of[tt] = static_cast<int>(grids.size());
    grids.push_back(GridInfo::of(tt, tg));
    target_grid.emplace(tt, std::move(tg));
  }
  // Weights, each set once: (source grid, method and target).
  struct WeightSet {
    Links links;
    std::string file;
  };
  std::map<std::pair<int, std::string>, WeightSet> weights;
  std::map<std::tuple<int, std::string, std::vector<i64>>, int> remap_of;
  for (std::size_t w = 0; w < wants.size(); ++w) {
    const RegridConfig& g = *wants[w].g;
    const std::string tt = target_text(g);
    const Grid& tg = target_grid.at(tt);
    const GridInfo& sgi = grids[static_cast<std::size_t>(src_grid[w])];
    const auto wkey = std::make_pair(src_grid[w], g.describe() + "|" + g.weights);
    if (!weights.count(wkey)) {
      const Grid sg = grid_of(sgi);
      WeightSet ws;
      if (g.weights.empty()) {
        WeightWriteOptions wo;
        ws.links = generate(g, sg, tg, comm, wo);
      } else {
        // The cache may go to the output's folder, which is made later (when the files are).
        const std::filesystem::path parent = std::filesystem::path(g.weights).parent_path();
        std::error_code ec;
        if (rank == 0 && !parent.empty()) std::filesystem::create_directories(parent, ec);
        // The grids' fingerprints and the method key the cache, as SCRIPR CONSERV's rmp_ files.
        const std::string fp = estuary::detail::hex_fingerprints(sg, tg, comm) + "-IO-" + g.describe();
        estuary::detail::CachedWeights c = estuary::detail::cached_weights(
            g.weights, fp, sgi.global_size, tg.global_size, comm, [&](Links& links, WeightWriteOptions& wo) {
              links = generate(g, sg, tg, comm, wo);
              wo.title = "estuary output on another grid: " + sgi.name + " to " + g.describe();
              wo.src_grid = &sg;
              wo.dst_grid = &tg;
            });
        using From = estuary::detail::CachedWeights::From;
        if (log)
          log(c.from == From::user_file ? "weights read from " + g.weights
              : c.from == From::cache   ? "weights reused from " + g.weights + " (same grids and method)"
                                        : "weights generated and cached in " + g.weights);
        ws.links = std::move(c.links);
        ws.file = std::move(c.weight_file);
      }
      weights.emplace(wkey, std::move(ws));
    }
    const WeightSet& ws = weights.at(wkey);
    // One Remap per weight set and source decomposition.
    const auto rkey = std::make_tuple(wkey.first, wkey.second, src_points[w]);
    if (!remap_of.count(rkey)) {
      RemapOptions ro;
      ro.unmapped_value = kFillValue;
      const Decomp src = Decomp::indices(sgi.global_size, src_points[w]);
      const Decomp dst = Decomp::indices(tg.global_size, grids[static_cast<std::size_t>(target_of.at(tt))].points);
      x.remaps.push_back(at_config(g, "remap from grid " + sgi.name, [&] {
        return ws.file.empty() ? std::make_unique<Remap>(ws.links, src, dst, comm, ro)
                               : std::make_unique<Remap>(ws.file, src, dst, comm, ro);
      }));
      remap_of[rkey] = static_cast<int>(x.remaps.size() - 1);
    }
    // The remapped field: the source's levels and attributes on the target's block.
    const FieldInfo& sf = fields[static_cast<std::size_t>(wants[w].field)];
    Impl::Job job;
    job.remap = remap_of.at(rkey);
    job.pos = src_pos[w];
    const std::size_t nlev = job.pos.size();
    const GridInfo& tgi = grids[static_cast<std::size_t>(target_of.at(tt))];
    job.nb = static_cast<i64>(tgi.points.size());
    job.in.assign(nlev, std::vector<double>(src_points[w].size(), 0.0));
    job.outbuf.assign(nlev * static_cast<std::size_t>(job.nb), 0.0);
    FieldDef def;
    def.name = regridded_name(sf.def.name, g);
    def.grid = tgi.name;
    def.levels = sf.def.levels;
    def.level_units = sf.def.level_units;
    def.units = sf.def.units;
    def.long_name = sf.def.long_name;
    def.standard_name = sf.def.standard_name;
    std::vector<i64> idx;
    for (std::size_t l = 0; l < nlev; ++l)
      for (i64 p : tgi.points) idx.push_back(static_cast<i64>(l) * tgi.global_size + p);
    def.decomp = Decomp::indices(static_cast<i64>(nlev) * tgi.global_size, std::move(idx));
    // Written as the fill value: targets the target grid masks and targets no link reaches (no
    // valid source: a zero field leaves them at the unmapped value).
    std::vector<double> zero(src_points[w].size(), 0.0), probe(static_cast<std::size_t>(job.nb));
    x.remaps[static_cast<std::size_t>(job.remap)]->run(zero, probe);
    def.mask.assign(nlev * static_cast<std::size_t>(job.nb), 1);
    for (std::size_t l = 0; l < nlev; ++l)
      for (std::size_t k = 0; k < static_cast<std::size_t>(job.nb); ++k)
        if (probe[k] == kFillValue || (!tgi.mask.empty() && tgi.mask[k] == 0))
          def.mask[l * static_cast<std::size_t>(job.nb) + k] = 0;
    job.out = static_cast<int>(fields.size());
    fields.push_back({std::move(def), -1, {}, false});
    x.by_field[wants[w].field].push_back(static_cast<int>(x.jobs.size()));
    x.jobs.push_back(std::move(job));
  }
}

bool Regrids::written(int f, std::span<const double> data, const std::function<bool(int)>& wanted,
                      const std::function<bool(int, std::span<const double>)>& put) {
  Impl& x = *impl_;
  auto it = x.by_field.find(f);
  if (it == x.by_field.end()) return false;
  bool stop = false;
  for (int j : it->second) {
    Impl::Job& job = x.jobs[static_cast<std::size_t>(j)];
    if (!wanted(job.out)) continue;
    std::vector<RemapField> rf;
    for (std::size_t l = 0; l < job.pos.size(); ++l) {
      for (std::size_t k = 0; k < job.pos[l].size(); ++k) job.in[l][k] = data[job.pos[l][k]];
      rf.push_back({job.in[l], std::span<double>(job.outbuf).subspan(l * static_cast<std::size_t>(job.nb),
                                                                    static_cast<std::size_t>(job.nb))});
    }
    // Every level in one exchange.
    const double t0 = MPI_Wtime();
    x.remaps[static_cast<std::size_t>(job.remap)]->run(rf);
    x.seconds += MPI_Wtime() - t0;
    stop = put(job.out, job.outbuf) || stop;
  }
  return stop;
}

}  // namespace estuary::io
