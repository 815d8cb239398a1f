// Component's private state (Component::Impl) and the helpers its parts share: component.cpp
// (definitions, enddef, put/get, terminate), component_setup.cpp (one coupling's set-up and
// mapping), component_restart.cpp (restart files) and component_oasis.cpp (OASIS's coupling
// communicator, queries and communicators between components).
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include "common/mpi_util.hpp"
#include "couple/couple_io.hpp"
#include "couple/coupling.hpp"
#include "estuary/settings.hpp"
#include "couple/coupling_weights.hpp"
#include "couple/grid_writing.hpp"  // OASIS grid files
#include "couple/timeline.hpp"
#include "estuary/couple.hpp"
#include "estuary/error.hpp"
#include "estuary/grid_files.hpp"  // OASIS grid files
#include "estuary/runoff.hpp"
#include "estuary/weightgen.hpp"

namespace estuary {

using detail::check_mpi;
using detail::Coupling;
using i64 = std::int64_t;

// What one rank defined, as all ranks learn it at enddef.
struct VarInfo {
  std::string comp, partition;
  int bundle = 1;
  i64 global = 0;
  std::vector<int> ranks;  // world ranks defining it
};

// A lag > 0 makes the first gets of a run take the last puts of the previous one.
inline bool lagged(const CouplingConfig& c) {
  return c.lag > 0 && (c.status == FieldStatus::exported || c.status == FieldStatus::expout);
}

// The info code of a put to several couplings: the first action (sent, output, restart...);
// LocTrans over Ok when none acts (an accumulation is not "nothing done").
inline Info strongest(Info so_far, Info next) {
  if (so_far != Info::ok && so_far != Info::loctrans) return so_far;
  return next == Info::ok ? so_far : next;
}

inline std::string path_in(const std::string& dir, const std::string& file) {
  if (dir.empty() || file.empty() || file[0] == '/') return file;
  return dir + "/" + file;
}

struct Component::Impl {
  std::string name;
  ComponentOptions opt;
  MPI_Comm world = MPI_COMM_NULL, comm = MPI_COMM_NULL;
  // terminate's bounded waits run on a communicator of their own: a wait that timed out
  // leaves a collective behind, which must not meet the user's later ones on `world`.
  MPI_Comm term = MPI_COMM_NULL;
  int wrank = 0, wsize = 1, crank = 0;
  struct Part {
    std::string name;
    Decomp decomp;
  };
  struct GridDef {
    std::string name;
    int part = 0;
    Grid grid;
  };
  struct Var {
    std::string name;
    int part = 0;
    Direction dir = Direction::out;
    int bundle = 1;
    std::vector<std::pair<Coupling*, int>> uses;  // the couplings and positions it takes part in
  };
  std::vector<Part> parts;
  std::vector<GridDef> grids;
  std::vector<Var> vars;
  std::map<std::string, WeightFunction> weight_functions;  // SCRIPR CALLBACK, by name
  CouplingSetup setup;
  bool defined = false, terminated = false;
  // The configuration file: ComponentOptions::config, ESTUARY_CONFIG, estuary.yaml or namcouple
  // in the run folder (read collectively by enddef).
  std::string config_path() const;
  // Before enddef: the configuration as this rank alone reads it (Component::in_configuration,
  // OASIS's def_var, which knows the namcouple from init_comp); read once.
  mutable std::optional<CouplingSetup> early_setup;
  std::vector<std::unique_ptr<Coupling>> couplings;
  std::string log_path;
  // OASIS grid files: the pieces given by write_grid ... until enddef writes them.
  detail::GridWriting grid_writing;

  // ---- OASIS's coupling communicator, queries and communicators between components
  // (set_couplcomm ... get_multi_intracomm, at the end of this file) ----
  std::vector<std::string> world_names;  // the component of every world rank (constructor)
  bool couplcomm_set = false;            // set_couplcomm was called
  bool coupling = true;                  // this rank takes part in the coupling
  MPI_Comm user_couplcomm = MPI_COMM_NULL;  // as given to set_couplcomm (not owned)
  int couplcomm_rank = 0, couplcomm_size = 0;  // this rank's place in it when it was given
  MPI_Comm cpl = MPI_COMM_NULL;   // enddef: this component's coupling ranks (owned)
  MPI_Comm peer = MPI_COMM_NULL;  // enddef: a duplicate of the world for MPI_Intercomm_create
  // enddef: the components in the order of their first world rank, the world rank of each
  // one's coupling root (rank 0 of its coupling communicator; -1: none) and coupling size.
  std::vector<std::string> comp_order;
  std::vector<int> comp_root, comp_size;
  int debug = -1;  // set_debug_level; -1: the configuration's $NLOGPRT
  MPI_Comm own_world = MPI_COMM_NULL;  // ComponentOptions::coupled: the coupled or uncoupled ranks
  void oasis_enddef();
  void require_coupling(const char* routine) const;
  const Var& var_of(int var, const char* routine) const;
  int comp_index(const std::string& comp, const char* routine) const;
  // --- timeline (couple/timeline.hpp): null when not recording ---
  std::unique_ptr<detail::Timeline> timeline;
  bool timeline_on = false;  // the configuration's switch after ESTUARY_TIMELINE, agreed at enddef

  ~Impl() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    if (!fin && term != MPI_COMM_NULL) MPI_Comm_free(&term);
    if (!fin && cpl != MPI_COMM_NULL) MPI_Comm_free(&cpl);
    if (!fin && peer != MPI_COMM_NULL) MPI_Comm_free(&peer);
    if (!fin && own_world != MPI_COMM_NULL) MPI_Comm_free(&own_world);
  }
  std::string where() const { return "component " + name + ", " + detail::world_rank_label(); }
  void log(const std::string& line) const {
    if (crank != 0) return;
    if (std::FILE* f = std::fopen(log_path.c_str(), "a")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
  const GridDef* grid(const std::string& gname, int part) const {
    for (const GridDef& g : grids)
      if (g.name == gname && g.part == part) return &g;
    return nullptr;
  }
  void read_config();
  void build(const CouplingConfig& cfg, std::map<std::pair<std::string, int>, VarInfo>& table);
  void setup_mapping(Coupling& c, const CouplingConfig& cfg, int src_part, int dst_part);
  const Coupling* shared_remap(const Coupling& c) const;
  Links callback_links(Coupling& c, const CouplingConfig& cfg, const Grid& sg, const Grid& dg, const std::string& here);
  void read_restart(Coupling& c);
  void write_restarts();
};

// Every rank's values gathered on every rank of comm, in rank order.
template <class T>
inline std::vector<T> allgather_all(const std::vector<T>& mine, MPI_Datatype type, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  for (int r = 1; r < p; ++r)
    displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r - 1)] + counts[static_cast<std::size_t>(r - 1)];
  std::vector<T> all(static_cast<std::size_t>(displs.back() + counts.back()));
  check_mpi(MPI_Allgatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, comm), "MPI_Allgatherv");
  return all;
}

// SCRIPR CALLBACK (YAC's callback interpolation): every target rank asks the registered
// function for the links of its targets, given every source centre; what it returns is checked
// (indices in range, rows among the rank's own targets) and agreed over the coupling.

}  // namespace estuary
