// The weights of a coupling generated at set-up: SCRIPR (OASIS's methods) and STACK (estuary's
// YAC-style interpolation stack), with OASIS's cache-file convention for the expensive ones.
#include "couple/coupling_weights.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/runoff.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/weights.hpp"
#include "remap/weight_cache.hpp"

namespace estuary::detail {

namespace {

// Generated multi-column weights as one matrix over the stacked source: column c of link
// (d, s) is the link (d, c * n_src + s), a link's columns consecutive (as read_weights with
// stack_columns returns a file's).
Links stack_columns(const Links& value, const std::vector<std::array<double, 4>>& columns, std::int64_t n_src) {
  Links out;
  for (std::size_t e = 0; e < value.row.size(); ++e)
    for (std::size_t col = 0; col < 4; ++col)
      out.add(value.row[e], static_cast<std::int64_t>(col) * n_src + value.col[e], columns[e][col]);
  return out;
}

// An error of a generator, re-thrown at the coupling's place.
template <class F>
auto at_coupling(const WeightContext& ctx, const std::string& what, F&& f) {
  try {
    return f();
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {
    throw Error(what + e.fault(), ctx.here + (e.where().empty() ? "" : ", " + e.where()), e.fix());
  }
}

// OASIS's convention for weights that cost (remap/weight_cache.hpp), logged for the coupling.
CouplingWeights cached(const std::string& file, const std::string& fp, const std::string& what, MPI_Comm comm,
                       const WeightContext& ctx, const std::function<void(Links&, WeightWriteOptions&)>& generate) {
  CachedWeights c = cached_weights(file, fp, ctx.src_global, ctx.dst_global, comm, generate);
  if (c.from == CachedWeights::From::user_file) {
    ctx.log("coupling " + ctx.label + ": " + what + " weights read from " + file);
  } else if (c.from == CachedWeights::From::cache) {
    ctx.log("coupling " + ctx.label + ": " + what + " weights reused from " + file + " (same grids)");
  } else {
    char took[64];
    std::snprintf(took, sizeof took, "%.3f", c.seconds);
    ctx.log("coupling " + ctx.label + ": " + what + " weights generated in " + took + " s, cached in " + file);
  }
  CouplingWeights out;
  out.links = std::move(c.links);
  out.weight_file = std::move(c.weight_file);
  return out;
}

CouplingWeights conserv(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm, const WeightContext& ctx) {
  const std::string norm = cfg.scripr->normalization.empty() ? "DESTAREA" : cfg.scripr->normalization;
  const std::string file = !ctx.file.empty() ? ctx.file
                           : path_in(ctx.directory, "rmp_" + cfg.src_grid.name + "_to_" + cfg.dst_grid.name +
                                                        "_CONSERV_" + norm + ".nc");
  const int order = cfg.scripr->order == "SECOND" ? 2 : 1;
  const std::string fp = hex_fingerprints(sg, dg, comm) + "-CONSERV-" + norm + "-" + std::to_string(order);
  return cached(file, fp, "CONSERV", comm, ctx, [&](Links& links, WeightWriteOptions& wo) {
    ConservativeOptions co;
    co.order = order;
    co.normalization = norm == "DESTAREA" ? ConservNormalization::destarea : ConservNormalization::fracarea;
    co.nearest_for_uncovered = norm == "FRACNNEI";
    links = at_coupling(ctx, "", [&] { return conservative_weights(sg, dg, comm, co).links; });
    wo.map_method = "Conservative remapping";
    wo.normalization = norm == "DESTAREA" ? "destarea" : "fracarea";
    wo.title = "estuary SCRIPR CONSERV " + norm + (order == 2 ? " SECOND" : " FIRST");
  });
}

// STACK: the stages' one matrix, cached in rmp_<src>_to_<dst>_STACK.nc keyed by the grids and
// the stack's canonical text; the fixed value travels in the file (estuary_fixed_value), so a
// re-read file gives the uncovered targets the same value.
CouplingWeights stack(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm, const WeightContext& ctx) {
  std::vector<StackStage> stages;
  for (const StageSpec& st : cfg.interpolation) stages.push_back(make_stage(st.name, st.params, ctx.here));
  const std::string text = describe(stages);
  const std::string file = !ctx.file.empty() ? ctx.file
                           : path_in(ctx.directory, "rmp_" + cfg.src_grid.name + "_to_" + cfg.dst_grid.name + "_STACK.nc");
  const std::string fp = hex_fingerprints(sg, dg, comm) + "-STACK-" + text;
  CouplingWeights out = cached(file, fp, "STACK", comm, ctx, [&](Links& links, WeightWriteOptions& wo) {
    StackWeights w = at_coupling(ctx, "STACK: ", [&] { return stack_weights(sg, dg, comm, stages); });
    links = std::move(w.links);
    wo.title = "estuary STACK " + text;
    if (w.has_fixed) {
      char v[40];
      std::snprintf(v, sizeof v, "%.17g", w.fixed_value);
      wo.attributes.emplace_back("estuary_fixed_value", v);
    }
    std::string counts;
    for (std::size_t i = 0; i < stages.size() && i < w.filled.size(); ++i)
      counts.append(counts.empty() ? "" : ", ").append(name_of(stages[i].kind)).append(" ").append(std::to_string(w.filled[i]));
    ctx.log("coupling " + ctx.label + ": STACK " + text + ": targets filled per stage: " + counts);
  });
  // The file's word for the targets without links (the cache's, or a user file's if it has one).
  const std::string fixed = read_global_attribute(file, "estuary_fixed_value", comm);
  if (!fixed.empty()) {
    try {
      out.unmapped_value = std::stod(fixed);
    } catch (const std::exception&) {
      throw Error("estuary_fixed_value '" + fixed + "' is not a number", file, "remove the file to regenerate it");
    }
  }
  return out;
}

}  // namespace

std::optional<RunoffOptions> runoff_options(const ScriprSpec& s) {
  RunoffOptions o;
  o.variance = s.variance;
  if (s.method == "LOCCUNIF" || s.method == "LOCCDIST" || s.method == "LOCCGAUS") {
    o.neighbors = s.neighbors;
    o.weighting = s.method == "LOCCUNIF"   ? RunoffWeighting::uniform
                  : s.method == "LOCCDIST" ? RunoffWeighting::distance
                                           : RunoffWeighting::gaussian;
    return o;
  }
  if (s.method != "SPMAP") return std::nullopt;
  o.spread_distance = s.spread_distance;
  o.max_search_distance = s.max_search_distance;
  o.weighting = s.weighting == "DIST" ? RunoffWeighting::distance : RunoffWeighting::uniform;
  o.scaling = s.scaling == "SRCAREA"      ? RunoffScaling::srcarea
              : s.scaling == "INVTGTAREA" ? RunoffScaling::invtgtarea
              : s.scaling == "NONE"       ? RunoffScaling::none
                                          : RunoffScaling::fracarea;
  return o;
}

bool weights_need_corners(const CouplingConfig& cfg) {
  if (cfg.scripr) return cfg.scripr->method == "CONSERV";
  for (const StageSpec& st : cfg.interpolation) {
    const StackStage s = make_stage(st.name, st.params, cfg.origin);
    if (s.kind == StackStage::Kind::conservative) return true;
    // Creep finds neighbours by i, j on a 2-D target, by shared corners otherwise.
    if (s.kind == StackStage::Kind::creep && !(cfg.dst_grid.nx > 0 && cfg.dst_grid.ny > 1)) return true;
  }
  return false;
}

namespace {
// The methods OASIS does not cache (DISTWGT, BILINEAR, BICUBIC, GAUSWGT, LOCC*, CALLBACK, ...):
// generated in memory, with OASIS's nearest-neighbour fill.
CouplingWeights generated(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm,
                          const WeightContext& ctx);
}  // namespace

CouplingWeights coupling_weights(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm,
                                 const WeightContext& ctx) {
  if (!cfg.interpolation.empty()) return stack(cfg, sg, dg, comm, ctx);
  const ScriprSpec& sp = *cfg.scripr;
  if (sp.method == "CONSERV") return conserv(cfg, sg, dg, comm, ctx);
  if (ctx.file.empty()) return generated(cfg, sg, dg, comm, ctx);
  // MAPPING's file: read if it is there (a user's file as it is; estuary's own if made for these
  // grids and settings), else generated and written there. A BICUBIC matrix is written folded
  // (one column): a later run applies it as it stands, and a put with the model's gradients
  // then needs CDO's four-column genbic file under that name.
  char params[96];
  std::snprintf(params, sizeof params, "-%s-%s-%s-%d-%.17g", sp.method.c_str(), sp.grid_type.c_str(),
                sp.nearest_fill ? "fill" : "NF", sp.neighbors, sp.variance);
  const std::string fp = hex_fingerprints(sg, dg, comm) + params + (sp.method == "CALLBACK" ? "-" + sp.callback : "");
  CouplingWeights made;
  CouplingWeights out = cached(ctx.file, fp, "SCRIPR " + sp.method, comm, ctx, [&](Links& links, WeightWriteOptions& wo) {
    made = generated(cfg, sg, dg, comm, ctx);
    links = made.links;
    wo.title = "estuary SCRIPR " + sp.method;
  });
  if (out.weight_file.empty()) {  // generated here: keep the four columns for puts with gradients
    made.links = std::move(out.links);
    return made;
  }
  return out;
}

namespace {
CouplingWeights generated(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm,
                          const WeightContext& ctx) {
  const std::string method = cfg.scripr->method;
  CouplingWeights out;
    if (method == "DISTWGT") {
      DistanceWeightOptions o;
      o.neighbors = cfg.scripr->neighbors;
      try {
        out.links = distance_weights(sg, dg, comm, o);
      } catch (const MpiError&) {
        throw;
      } catch (const Error& e) {  // name the coupling (file and line) the neighbours come from
        throw Error("SCRIPR DISTWGT: " + e.fault(), ctx.here + ", distance_weights", e.fix());
      }
    } else if ((method == "BILINEAR" || method == "BICUBIC") && cfg.scripr->grid_type == "D") {
      // A reduced Gaussian source (OASIS's grid type D): OASIS's row-by-row searches (bilinear:
      // remap_bi's quads; bicubic: remap_bicubic_reduced's 16 points in 4 rows), with their own
      // fallbacks and nearest-neighbour fill (the fill below then finds nothing left to fill).
      const bool cubic = method == "BICUBIC";
      try {
        if (cubic) {
          ReducedBicubicOptions o;
          o.nearest_fill = cfg.scripr->nearest_fill;
          out.links = bicubic_weights_reduced(sg, dg, comm, o);
        } else {
          ReducedBilinearOptions o;
          o.nearest_fill = cfg.scripr->nearest_fill;
          out.links = bilinear_weights_reduced(sg, dg, comm, o);
        }
      } catch (const MpiError&) {
        throw;
      } catch (const Error& e) {
        throw Error("SCRIPR " + method + " D: " + e.fault(),
                    ctx.here + (cubic ? ", bicubic_weights_reduced" : ", bilinear_weights_reduced"), e.fix());
      }
    } else if (method == "BILINEAR") {
      out.links = bilinear_weights(sg, dg, comm);
    } else if (const auto ro = runoff_options(*cfg.scripr)) {
      // Runoff (LOCC*, SPMAP): each source point spread over the nearest unmasked targets.
      try {
        out.links = runoff_weights(sg, dg, comm, *ro);
      } catch (const MpiError&) {
        throw;
      } catch (const Error& e) {
        throw Error("SCRIPR " + method + ": " + e.fault(), ctx.here + ", runoff_weights", e.fix());
      }
    } else if (method == "CALLBACK") {
      out.links = ctx.callback(sg, dg);
    } else if (method == "GAUSWGT") {
      GaussianWeightOptions o;
      o.neighbors = cfg.scripr->neighbors;
      o.variance = cfg.scripr->variance;
      try {
        out.links = gaussian_weights(sg, dg, comm, o);
      } catch (const MpiError&) {
        throw;
      } catch (const Error& e) {
        throw Error("SCRIPR GAUSWGT: " + e.fault(), ctx.here + ", gaussian_weights", e.fix());
      }
    } else if (method == "BICUBIC") {
      // CDO's genbic links, folded with its source gradients into one matrix (as `cdo remap`
      // applies a bicubic file), for puts without gradients; the four columns are kept too, for
      // a model that puts its own gradients.
      BicubicWeights bw = bicubic_weights(sg, dg, comm);
      out.links = std::move(bw.links);
      out.stacked = stack_columns(bw.value, bw.columns, ctx.src_global);
      out.ncols = 4;
    } else {
      throw Error("SCRIPR " + method + " is not generated by estuary", ctx.here, "use DISTWGT, BILINEAR, or MAPPING with a weight file");
    }
    // OASIS3-MCT fills the targets the method leaves without links from the nearest unmasked
    // source point, unless the namcouple says DISTWGTNF / BILINEARNF / BICUBICNF / GAUSWGTNF.
    // (Not after a runoff mapping: a target no river reaches gets nothing, or the total would change.)
    if (cfg.scripr->nearest_fill && !runoff_options(*cfg.scripr)) {
      const std::size_t before = out.links.row.size();
      fill_nearest(sg, dg, comm, out.links);
      for (std::size_t e = before; e < out.links.row.size() && out.ncols > 1; ++e)  // value column only
        out.stacked.add(out.links.row[e], out.links.col[e], out.links.weight[e]);
      long long filled = static_cast<long long>(out.links.row.size() - before);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &filled, 1, MPI_LONG_LONG, MPI_SUM, comm), "MPI_Allreduce");
      if (filled > 0)
        ctx.log("coupling " + ctx.label + ": " + std::to_string(filled) + " target point(s) without " + method +
            " links filled from the nearest unmasked source point (OASIS's default; " + method + "NF turns it off)");
    }
  return out;
}
}  // namespace

}  // namespace estuary::detail
