// The weights of a coupling generated at set-up (SCRIPR, STACK / YAML interpolation): which
// generator, the OASIS-named cache files, OASIS's nearest-neighbour fill. A function of the
// coupling's configuration, its two grids and the communicator, so that a new method is one
// more branch here and nothing in the component.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "estuary/couple_config.hpp"
#include "estuary/grid.hpp"
#include "estuary/runoff.hpp"
#include "estuary/weights.hpp"

namespace estuary::detail {

struct CouplingWeights {
  Links links;               // this rank's share, when weight_file is empty
  std::string weight_file;   // else: the file the Remap reads (a cached or user file)
  double unmapped_value = 0.0;  // for targets without links (STACK's fixed stage)
  // SCRIPR BICUBIC: the weight columns stacked over the source [x, g1, g2, g3] (ncols 4), for
  // puts that carry the model's gradients; empty (ncols 1) otherwise.
  Links stacked;
  int ncols = 1;
};

struct WeightContext {
  std::string directory;  // the run folder (cache files live there)
  std::string label;      // the coupling, for the log
  std::string here;       // where errors point: "enddef, <coupling> (namcouple:12)"
  std::int64_t src_global = 0, dst_global = 0;
  std::function<void(const std::string&)> log;
  // SCRIPR CALLBACK: the links of the weight function the target component registered.
  std::function<Links(const Grid& sg, const Grid& dg)> callback;
};

// Collective over comm (every rank of both sides). `sg`, `dg`: this rank's share of each grid
// (possibly none); cfg.scripr or cfg.interpolation must be set.
CouplingWeights coupling_weights(const CouplingConfig& cfg, const Grid& sg, const Grid& dg, MPI_Comm comm,
                                 const WeightContext& ctx);

// The runoff mapping a SCRIPR entry asks for (OASIS 5's LOCC*: the n nearest unmasked targets,
// conservative; YAC's SPMAP from YAML), or none for the other methods.
std::optional<RunoffOptions> runoff_options(const ScriprSpec& s);

// True when the configured stages need the grids' corners (conservative; creep on a target the
// configuration gives no nx x ny for).
bool weights_need_corners(const CouplingConfig& cfg);

}  // namespace estuary::detail
