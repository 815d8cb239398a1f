// Component: definitions, end of definition (matching with the configuration and setting up
// every coupling), put/get dispatch and termination (restarts, timers).
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

namespace {


// What one rank defined, as all ranks learn it at enddef.
struct VarInfo {
  std::string comp, partition;
  int bundle = 1;
  i64 global = 0;
  std::vector<int> ranks;  // world ranks defining it
};

// A lag > 0 makes the first gets of a run take the last puts of the previous one.
bool lagged(const CouplingConfig& c) {
  return c.lag > 0 && (c.status == FieldStatus::exported || c.status == FieldStatus::expout);
}

// The info code of a put to several couplings: the first action (sent, output, restart...);
// LocTrans over Ok when none acts (an accumulation is not "nothing done").
Info strongest(Info so_far, Info next) {
  if (so_far != Info::ok && so_far != Info::loctrans) return so_far;
  return next == Info::ok ? so_far : next;
}

std::string path_in(const std::string& dir, const std::string& file) {
  if (dir.empty() || file.empty() || file[0] == '/') return file;
  return dir + "/" + file;
}

}  // namespace

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
  Redist to_root(const Decomp& d, i64 global) const {  // this component's points -> its root
    return Redist(d, crank == 0 ? Decomp::stripes(global, {{0, global, 1}}) : Decomp::empty(global), comm);
  }
};

Component::Component(const std::string& name, ComponentOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.name = name;
  m.opt = std::move(options);
  m.world = m.opt.world;
  // OASIS's uncoupled components (ComponentOptions::coupled): when any rank of the world does
  // not couple, the coupled and the uncoupled ranks become two worlds, so that the coupled
  // components' collectives leave the others out.
  {
    const int mine = m.opt.coupled ? 1 : 0;
    int all = 0;
    check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, m.world), "MPI_Allreduce");
    if (!all) {
      const std::vector<std::string> who = detail::allgather_strings(name + (mine ? "+" : "-"), m.world);
      detail::agree(m.world, [&] {
        for (const std::string& w : who)
          if (w.substr(0, w.size() - 1) == name && w.back() != (mine ? '+' : '-'))
            throw Error("component " + name + " is coupled on some ranks and not on others", detail::world_rank_label(),
                        "give every rank of a component the same `coupled`");
      });
      int r = 0;
      MPI_Comm_rank(m.world, &r);
      check_mpi(MPI_Comm_split(m.world, mine, r, &m.own_world), "MPI_Comm_split");
      m.world = m.own_world;
    }
  }
  m.coupling = m.opt.coupled;
  MPI_Comm_rank(m.world, &m.wrank);
  MPI_Comm_size(m.world, &m.wsize);
  const std::vector<std::string> names = detail::allgather_strings(name, m.world);
  detail::agree(m.world, [&] {
    if (name.empty() || name.find_first_of(" \t\n:") != std::string::npos)
      throw Error("component name \"" + name + "\" is empty or holds blanks or colons", m.where());
  });
  const int color = static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  check_mpi(MPI_Comm_split(m.world, color, m.wrank, &m.comm), "MPI_Comm_split");
  check_mpi(MPI_Comm_dup(m.world, &m.term), "MPI_Comm_dup");
  MPI_Comm_rank(m.comm, &m.crank);
  m.world_names = names;
  // The log starts here, not at enddef: errors of the definitions are recorded in it too
  // (log_error). Every rank waits for the root's removal of the previous run's log.
  m.log_path = path_in(m.opt.directory, "estuary." + m.name + ".log");
  if (m.crank == 0) {
    std::error_code ec;
    std::filesystem::remove(m.log_path, ec);
  }
  check_mpi(MPI_Barrier(m.comm), "MPI_Barrier");
}

Component::~Component() {
  // terminate() is collective: during unwinding from an error the other ranks may never come.
  if (impl_ && !impl_->terminated && std::uncaught_exceptions() == 0) {
    try {
      terminate();
    } catch (const std::exception& e) {
      std::cerr << "estuary: terminate of component " << impl_->name << " failed: " << e.what() << "\n";
    }
  }
}

const std::string& Component::name() const { return impl_->name; }
MPI_Comm Component::comm() const { return impl_->comm; }
const CouplingSetup& Component::setup() const { return impl_->setup; }

int Component::def_partition(const Decomp& points, const std::string& name) {
  Impl& m = *impl_;
  if (m.defined) throw Error("def_partition after enddef", m.where(), "define everything before enddef");
  const std::string n = name.empty() ? "partition" + std::to_string(m.parts.size() + 1) : name;
  for (const Impl::Part& p : m.parts)
    if (p.name == n) throw Error("partition \"" + n + "\" defined twice", m.where());
  m.parts.push_back({n, points});
  return static_cast<int>(m.parts.size()) - 1;
}

std::int64_t Component::partition_size(int partition) const {
  const Impl& m = *impl_;
  if (partition < 0 || partition >= static_cast<int>(m.parts.size()))
    throw Error("partition id " + std::to_string(partition) + " is not defined here", m.where());
  return m.parts[static_cast<std::size_t>(partition)].decomp.size();
}

void Component::def_grid(const std::string& name, int partition, Grid grid) {
  Impl& m = *impl_;
  if (partition < 0 || partition >= static_cast<int>(m.parts.size()))
    throw Error("grid \"" + name + "\" names partition id " + std::to_string(partition) + ", not defined here", m.where());
  const Decomp& d = m.parts[static_cast<std::size_t>(partition)].decomp;
  if (grid.size() != d.size())
    throw Error("grid \"" + name + "\" has " + std::to_string(grid.size()) + " points, its partition " +
                    std::to_string(d.size()),
                m.where(), "give the cells of the partition's points, in its local order");
  grid.name = name;
  grid.global_size = d.global_size();
  if (grid.dims.empty()) grid.dims = {d.global_size()};
  grid.points = d.to_indices();
  grid.check();
  if (grid.area.empty() && grid.ncorner > 0) grid.compute_areas();
  m.grids.push_back({name, partition, std::move(grid)});
}

// ---- OASIS grid files (src/couple/grid_writing.cpp): the calls, checked and kept until enddef ----
namespace {
void add_grid_piece(Component::Impl& m, detail::GridPieceData d) {
  if (m.defined)
    throw Error("grid writing after enddef", m.where(), "write grids before enddef, which writes the files");
  detail::GridWritingPartition p;
  if (d.partition >= 0 && d.partition < static_cast<int>(m.parts.size()))
    p = {m.parts[static_cast<std::size_t>(d.partition)].name, &m.parts[static_cast<std::size_t>(d.partition)].decomp};
  m.grid_writing.add(std::move(d), p, m.where());
}
}  // namespace

bool Component::start_grids_writing() {
  if (impl_->defined)
    throw Error("start_grids_writing after enddef", impl_->where(), "write grids before enddef, which writes the files");
  return impl_->grid_writing.start(impl_->where());
}

void Component::write_grid(const std::string& name, std::int64_t nx, std::int64_t ny, std::span<const double> lon,
                           std::span<const double> lat, int partition) {
  add_grid_piece(*impl_, {name, detail::GridPiece::grid, nx, ny, 0, partition, {lon.begin(), lon.end()},
                          {lat.begin(), lat.end()}});
}

void Component::write_corner(const std::string& name, std::int64_t nx, std::int64_t ny, int nc,
                             std::span<const double> clo, std::span<const double> cla, int partition) {
  add_grid_piece(*impl_, {name, detail::GridPiece::corner, nx, ny, nc, partition, {clo.begin(), clo.end()},
                          {cla.begin(), cla.end()}});
}

void Component::write_mask(const std::string& name, std::int64_t nx, std::int64_t ny,
                           std::span<const std::int32_t> mask, int partition) {
  add_grid_piece(*impl_, {name, detail::GridPiece::mask, nx, ny, 0, partition, {mask.begin(), mask.end()}, {}});
}

void Component::write_area(const std::string& name, std::int64_t nx, std::int64_t ny, std::span<const double> area,
                           int partition) {
  add_grid_piece(*impl_, {name, detail::GridPiece::area, nx, ny, 0, partition, {area.begin(), area.end()}, {}});
}

void Component::terminate_grids_writing() {
  if (impl_->defined)
    throw Error("terminate_grids_writing after enddef", impl_->where(), "write grids before enddef, which writes the files");
  impl_->grid_writing.terminate(impl_->where());
}
// ---- end of OASIS grid files ----

void Component::register_weights(const std::string& name, WeightFunction f) {
  Impl& m = *impl_;
  if (m.defined) throw Error("register_weights(\"" + name + "\") after enddef", m.where(), "register before enddef");
  if (!f) throw Error("register_weights(\"" + name + "\") without a function", m.where());
  m.weight_functions[name] = std::move(f);
}

int Component::def_var(const std::string& name, int partition, Direction direction, int bundle) {
  Impl& m = *impl_;
  if (m.defined) throw Error("def_var after enddef", m.where(), "define everything before enddef");
  if (partition < 0 || partition >= static_cast<int>(m.parts.size()))
    throw Error("field \"" + name + "\" names partition id " + std::to_string(partition) + ", not defined here", m.where());
  if (bundle < 1) throw Error("field \"" + name + "\" has bundle size " + std::to_string(bundle), m.where(), "use 1 or more");
  if (name.empty() || name.find_first_of(" \t\n:") != std::string::npos)
    throw Error("field name \"" + name + "\" is empty or holds blanks or colons", m.where());
  for (const Impl::Var& v : m.vars)
    if (v.name == name && v.dir == direction) throw Error("field \"" + name + "\" defined twice", m.where());
  m.vars.push_back({name, partition, direction, bundle, {}});
  return static_cast<int>(m.vars.size()) - 1;
}

void Component::Impl::read_config() {
  std::string path = opt.config;
  if (path.empty()) {
    if (const char* env = std::getenv("ESTUARY_CONFIG")) path = env;
    else if (std::filesystem::exists(path_in(opt.directory, "estuary.yaml"))) path = path_in(opt.directory, "estuary.yaml");
    else path = path_in(opt.directory, "namcouple");
  }
  detail::agree(world, [&] {
    if (!std::filesystem::exists(path))
      throw Error("configuration file not found", "file " + path,
                  "give ComponentOptions::config, set ESTUARY_CONFIG, or put estuary.yaml or namcouple in the run folder");
    setup = read_coupling_config(path);
  });
  setup.timeout = Settings::get().timeout_s(setup.timeout);  // ESTUARY_TIMEOUT (or an old name)
  // Every rank sets up the couplings from its own reading: a component started with another
  // file (or another time-out) would enter other collectives and hang its partners.
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  detail::agree_same(world, "coupling configuration " + path + " (its contents)", text);
  detail::agree_same(world, "coupling time-out (timeout: or ESTUARY_TIMEOUT)", detail::time_str(setup.timeout));
  // --- timeline: every rank of the run records or none does (the common start is a barrier
  // over the world, and the file of a component is written by all its ranks together) ---
  detail::agree(world, [&] { timeline_on = detail::timeline_wanted(setup.timeline) && !opt.setup_only; });
  detail::agree_same(world, "coupling timeline (timeline:, $NLOGPRT's timer level < 0, or ESTUARY_TIMELINE)",
                     timeline_on ? "on" : "off");
}

void Component::enddef() {
  Impl& m = *impl_;
  if (m.defined) throw Error("enddef called twice", m.where());
  const double enddef_enter = MPI_Wtime();  // timeline: the enddef event
  if (!m.opt.coupled) {  // OASIS: an uncoupled component's enddef does nothing
    m.defined = true;
    return;
  }
  m.read_config();
  m.log("estuary coupler: component " + m.name + ", configuration " + m.setup.path + ", run length " +
        detail::time_str(m.setup.runtime) + " s");
  for (const std::string& n : m.setup.notes) m.log("note: " + n);
  m.oasis_enddef();  // the coupling ranks (set_couplcomm) and the table of components

  // ---- OASIS grid files: every component's write_grid ... pieces are written (collective
  // over the world) before any coupling below reads grids from the files.
  for (const std::string& line : m.grid_writing.write_files(m.name, m.opt.directory, m.world, [&m](int p) {
         if (p < 0 || p >= static_cast<int>(m.parts.size())) return detail::GridWritingPartition{};
         const Impl::Part& part = m.parts[static_cast<std::size_t>(p)];
         return detail::GridWritingPartition{part.name, &part.decomp};
       }))
    m.log(line);
  // ---- end of OASIS grid files ----

  // Every rank's definitions, so that every rank can match every coupling alike.
  std::ostringstream mine;
  for (const Impl::Var& v : m.vars) {
    const Impl::Part& p = m.parts[static_cast<std::size_t>(v.part)];
    mine << v.name << ' ' << (v.dir == Direction::out ? "out" : "in") << ' ' << v.bundle << ' ' << p.name << ' '
         << p.decomp.global_size() << ' ' << m.name << '\n';
  }
  const std::vector<std::string> all = detail::allgather_strings(mine.str(), m.world);
  std::map<std::pair<std::string, int>, VarInfo> table;  // (field, 1 out / 0 in)
  std::string fault;
  for (int r = 0; r < m.wsize; ++r) {
    std::istringstream in(all[static_cast<std::size_t>(r)]);
    std::string fname, dir, part, comp;
    int bundle = 1;
    i64 global = 0;
    while (in >> fname >> dir >> bundle >> part >> global >> comp) {
      VarInfo& vi = table[{fname, dir == "out" ? 1 : 0}];
      if (vi.ranks.empty()) {
        vi.comp = comp;
        vi.partition = part;
        vi.bundle = bundle;
        vi.global = global;
      } else if (fault.empty() && (vi.comp != comp || vi.partition != part || vi.bundle != bundle || vi.global != global)) {
        fault = "field " + fname + " (" + dir + ") is defined differently on world ranks " +
                std::to_string(vi.ranks.front()) + " (component " + vi.comp + ", partition " + vi.partition +
                ", bundle " + std::to_string(vi.bundle) + ", " + std::to_string(vi.global) + " points) and " +
                std::to_string(r) + " (component " + comp + ", partition " + part + ", bundle " +
                std::to_string(bundle) + ", " + std::to_string(global) + " points)";
      }
      vi.ranks.push_back(r);
    }
  }
  detail::agree(m.world, [&] {
    if (!fault.empty()) throw Error(fault, "enddef", "define each field once, on one partition of one component");
  });
  // Both sides of every coupling must exist, with matching shapes: collect every fault first.
  std::vector<std::string> faults;
  std::set<std::string> targets;
  std::vector<const CouplingConfig*> active;
  for (const CouplingConfig& c : m.setup.couplings) {
    const bool has_src = c.status != FieldStatus::input, has_dst = c.status != FieldStatus::output;
    // An entry whose fields no component defines is not used, as in OASIS3-MCT (a namcouple
    // often lists couplings of other configurations); one side without the other is an error.
    bool any = false;
    for (std::size_t k = 0; k < c.src_fields.size(); ++k)
      any = any || (has_src && table.count({c.src_fields[k], 1})) || (has_dst && table.count({c.dst_fields[k], 0}));
    if (!any) {
      m.log("note: " + c.origin + ": no component defines " + detail::join(c.src_fields) + " -> " +
            detail::join(c.dst_fields) + "; the entry is not used (as in OASIS3-MCT)");
      continue;
    }
    active.push_back(&c);
    if (!(c.period > 0))
      faults.push_back("the period " + detail::time_str(c.period) + " s of " + detail::join(c.src_fields) + " (" +
                       c.origin + ") is not positive, and a component defines its fields (OASIS3-MCT aborts on it too)");
    for (std::size_t k = 0; k < c.src_fields.size(); ++k) {
      const auto s = table.find({c.src_fields[k], 1});
      const auto d = table.find({c.dst_fields[k], 0});
      if (has_src && s == table.end())
        faults.push_back("field " + c.src_fields[k] + " (" + c.origin + ") is put by no component: no def_var with Direction::out");
      if (has_dst && d == table.end())
        faults.push_back("field " + c.dst_fields[k] + " (" + c.origin + ") is got by no component: no def_var with Direction::in");
      if (has_dst && d != table.end() && !targets.insert(c.dst_fields[k]).second)
        faults.push_back("field " + c.dst_fields[k] + " (" + c.origin + ") is the target of two couplings");
      if (has_src && has_dst && s != table.end() && d != table.end() && s->second.bundle != d->second.bundle)
        faults.push_back("fields " + c.src_fields[k] + " and " + c.dst_fields[k] + " (" + c.origin + ") have bundle sizes " +
                         std::to_string(s->second.bundle) + " and " + std::to_string(d->second.bundle));
      if (has_src && s != table.end() && !c.src_component.empty() && s->second.comp != c.src_component)
        faults.push_back("field " + c.src_fields[k] + " (" + c.origin + ") is put by component " + s->second.comp +
                         ", the configuration says " + c.src_component);
      if (has_dst && d != table.end() && !c.dst_component.empty() && d->second.comp != c.dst_component)
        faults.push_back("field " + c.dst_fields[k] + " (" + c.origin + ") is got by component " + d->second.comp +
                         ", the configuration says " + c.dst_component);
      if (k > 0 && has_src && s != table.end()) {
        const auto s0 = table.find({c.src_fields[0], 1});
        if (s0 != table.end() && (s0->second.comp != s->second.comp || s0->second.partition != s->second.partition))
          faults.push_back("multi-field coupling " + detail::join(c.src_fields) + " (" + c.origin +
                           ") mixes partitions or components on the source side");
      }
      if (k > 0 && has_dst && d != table.end()) {
        const auto d0 = table.find({c.dst_fields[0], 0});
        if (d0 != table.end() && (d0->second.comp != d->second.comp || d0->second.partition != d->second.partition))
          faults.push_back("multi-field coupling " + detail::join(c.dst_fields) + " (" + c.origin +
                           ") mixes partitions or components on the target side");
      }
    }
    if (c.lag > c.period || c.lag < -c.period)
      faults.push_back("the lag " + detail::time_str(c.lag) + " s of " + detail::join(c.src_fields) + " (" + c.origin +
                       ") exceeds its period " + detail::time_str(c.period) + " s (estuary keeps one transfer in flight)");
  }
  detail::agree(m.world, [&] {
    if (!faults.empty()) {
      std::string all_faults;
      for (const std::string& f : faults) all_faults += (all_faults.empty() ? "" : "; ") + f;
      throw Error(all_faults, "enddef, configuration " + m.setup.path);
    }
  });
  // Fields a component defines that the configuration does not couple do nothing (as in OASIS).
  for (const Impl::Var& v : m.vars) {
    bool used = false;
    for (const CouplingConfig& c : m.setup.couplings)
      for (const std::string& f : v.dir == Direction::out ? c.src_fields : c.dst_fields) used = used || f == v.name;
    if (!used) m.log("note: field " + v.name + " is defined but not coupled by " + m.setup.path + "; its puts and gets do nothing");
  }
  for (const CouplingConfig* c : active) m.build(*c, table);
  m.defined = true;
  if (m.opt.setup_only) return;  // nothing will move: no restart to read, no lagged first send
  // Restarts, collective over each source component (every rank knows every coupling's source).
  for (auto& c : m.couplings)
    if (c->src_comp == m.name && (lagged(*c->cfg) || c->cfg->loctrans.value_or(LocTrans::instant) != LocTrans::instant))
      m.read_restart(*c);
  // --- timeline: recording starts at a barrier over the world, the common start ---
  if (m.timeline_on) {
    detail::agree(m.world, [&] { m.timeline = std::make_unique<detail::Timeline>(m.name, m.setup, m.couplings, m.comm); });
    m.timeline->start(m.world, enddef_enter);
    m.log("timeline: recording every put and get; written to " + m.timeline->path(m.opt.directory) + " at terminate");
  }
}

// One coupling: its ranks, communicators, mapping, corrections and buffers.
void Component::Impl::build(const CouplingConfig& cfg, std::map<std::pair<std::string, int>, VarInfo>& table) {
  auto c = std::make_unique<Coupling>();
  c->cfg = &cfg;
  c->setup = &setup;
  c->directory = opt.directory;
  c->timeout = setup.timeout;
  c->log_path = log_path;
  c->label = detail::join(cfg.src_fields) + " -> " + detail::join(cfg.dst_fields) + " (" + cfg.origin + ")";
  const bool has_src = cfg.status != FieldStatus::input, has_dst = cfg.status != FieldStatus::output;
  const VarInfo* s = has_src ? &table.at({cfg.src_fields[0], 1}) : nullptr;
  const VarInfo* d = has_dst ? &table.at({cfg.dst_fields[0], 0}) : nullptr;
  c->src_comp = s ? s->comp : "";
  c->dst_comp = d ? d->comp : "";
  c->src_global = s ? s->global : 0;
  c->dst_global = d ? d->global : 0;
  for (const std::string& f : has_src ? cfg.src_fields : cfg.dst_fields)
    c->bundle.push_back(table.at({f, has_src ? 1 : 0}).bundle);
  for (int b : c->bundle) c->nvalues += b;
  std::vector<int> members;
  if (s) members.insert(members.end(), s->ranks.begin(), s->ranks.end());
  if (d) members.insert(members.end(), d->ranks.begin(), d->ranks.end());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const bool member = std::binary_search(members.begin(), members.end(), wrank);
  check_mpi(MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, wrank, &c->comm), "MPI_Comm_split");
  if (!member) {
    couplings.push_back(std::move(c));
    return;
  }
  const auto pos = [&](int r) { return static_cast<int>(std::lower_bound(members.begin(), members.end(), r) - members.begin()); };
  c->is_src = s && std::binary_search(s->ranks.begin(), s->ranks.end(), wrank);
  c->is_dst = d && std::binary_search(d->ranks.begin(), d->ranks.end(), wrank);
  if (s) c->src_root = pos(s->ranks.front());
  if (d) {
    c->dst_root = pos(d->ranks.front());
    for (int r : d->ranks) c->dst_ranks.push_back(pos(r));
  }
  check_mpi(MPI_Comm_split(c->comm, c->is_src ? 0 : MPI_UNDEFINED, wrank, &c->src_comm), "MPI_Comm_split");
  check_mpi(MPI_Comm_split(c->comm, c->is_dst ? 0 : MPI_UNDEFINED, wrank, &c->dst_comm), "MPI_Comm_split");
  // This rank's variables and partitions on each side.
  int src_part = -1, dst_part = -1;
  const std::size_t nf = has_src ? cfg.src_fields.size() : cfg.dst_fields.size();
  c->src_var.assign(nf, -1);
  c->dst_var.assign(nf, -1);
  for (std::size_t k = 0; k < nf; ++k)
    for (std::size_t v = 0; v < vars.size(); ++v) {
      Var& var = vars[v];
      if (c->is_src && var.dir == Direction::out && var.name == cfg.src_fields[k]) {
        c->src_var[k] = static_cast<int>(v);
        src_part = var.part;
        var.uses.emplace_back(c.get(), static_cast<int>(k));
      }
      if (c->is_dst && var.dir == Direction::in && var.name == cfg.dst_fields[k]) {
        c->dst_var[k] = static_cast<int>(v);
        dst_part = var.part;
        var.uses.emplace_back(c.get(), static_cast<int>(k));
      }
    }
  c->src_decomp = src_part >= 0 ? parts[static_cast<std::size_t>(src_part)].decomp : Decomp::empty(c->src_global);
  c->dst_decomp = dst_part >= 0 ? parts[static_cast<std::size_t>(dst_part)].decomp : Decomp::empty(c->dst_global);
  c->n_src = c->src_decomp.size();
  c->n_dst = c->dst_decomp.size();
  c->src_dims = {cfg.src_grid.nx, cfg.src_grid.ny};
  c->dst_dims = {cfg.dst_grid.nx, cfg.dst_grid.ny};
  const auto nv = static_cast<std::size_t>(c->nvalues);
  if (cfg.loctrans.value_or(LocTrans::instant) != LocTrans::instant) c->acc.assign(nv * static_cast<std::size_t>(c->n_src), 0.0);
  c->acc_count.assign(nf, 0);
  c->ready.assign(nf, 0);
  c->delivered.assign(nf, 0);
  c->last_put.assign(nf, -1e300);
  c->last_get.assign(nf, -1e300);
  c->src_timers.field = c->label + ", source side";
  c->dst_timers.field = c->label + ", target side";
  const std::string here = "enddef, " + c->label;
  detail::agree(c->comm, [&] {
    if (cfg.src_grid.nx > 0 && cfg.src_grid.ny > 0 && has_src && cfg.src_grid.nx * cfg.src_grid.ny != c->src_global)
      throw Error("the configuration gives the source grid " + cfg.src_grid.name + " " + std::to_string(cfg.src_grid.nx) +
                      " x " + std::to_string(cfg.src_grid.ny) + " points, the partition of " + cfg.src_fields[0] + " has " +
                      std::to_string(c->src_global),
                  here);
    if (cfg.dst_grid.nx > 0 && cfg.dst_grid.ny > 0 && has_dst && cfg.dst_grid.nx * cfg.dst_grid.ny != c->dst_global)
      throw Error("the configuration gives the target grid " + cfg.dst_grid.name + " " + std::to_string(cfg.dst_grid.nx) +
                      " x " + std::to_string(cfg.dst_grid.ny) + " points, the partition of " + cfg.dst_fields[0] + " has " +
                      std::to_string(c->dst_global),
                  here);
  });
  if (has_src && has_dst) setup_mapping(*c, cfg, src_part, dst_part);
  if (c->is_src && (cfg.status == FieldStatus::expout || cfg.status == FieldStatus::output)) {
    int r = 0;
    MPI_Comm_rank(c->src_comm, &r);
    c->src_gather = std::make_unique<Redist>(
        c->src_decomp, r == 0 ? Decomp::stripes(c->src_global, {{0, c->src_global, 1}}) : Decomp::empty(c->src_global),
        c->src_comm);
  }
  if (c->is_dst && (cfg.status == FieldStatus::expout || cfg.status == FieldStatus::input)) {
    int r = 0;
    MPI_Comm_rank(c->dst_comm, &r);
    c->dst_scatter = std::make_unique<Redist>(
        r == 0 ? Decomp::stripes(c->dst_global, {{0, c->dst_global, 1}}) : Decomp::empty(c->dst_global), c->dst_decomp,
        c->dst_comm);
    // EXPOUT also writes the target's values: the same plan reversed, not a new set-up per write.
    if (cfg.status == FieldStatus::expout) c->dst_gather = std::make_unique<Redist>(c->dst_scatter->reverse());
    c->rbuf.assign(nv * static_cast<std::size_t>(c->n_dst), 0.0);
  }
  log("coupling " + c->label + ": " + (c->src_comp.empty() ? "file" : c->src_comp) + " -> " +
      (c->dst_comp.empty() ? "file" : c->dst_comp) + ", period " + detail::time_str(cfg.period) + " s, lag " +
      detail::time_str(cfg.lag) + " s, " + name_of(cfg.status));
  couplings.push_back(std::move(c));
}

namespace {
// The source decomposition of the stacked source [x, g1, ...]: the rank's points in each of
// the `ncols` blocks, block after block (the layout of the Coupling's stacked buffer).
Decomp stacked_decomp(const Decomp& src, int ncols) {
  const i64 n = src.global_size();
  const std::vector<i64> own = src.to_indices();
  std::vector<i64> idx;
  idx.reserve(own.size() * static_cast<std::size_t>(ncols));
  for (int col = 0; col < ncols; ++col)
    for (i64 g : own) idx.push_back(col * n + g);
  return Decomp::indices(ncols * n, std::move(idx));
}
}  // namespace

// Every rank's values gathered on every rank of comm, in rank order.
template <class T>
std::vector<T> allgather_all(const std::vector<T>& mine, MPI_Datatype type, MPI_Comm comm) {
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
Links Component::Impl::callback_links(Coupling& c, const CouplingConfig& cfg, const Grid& sg, const Grid& dg,
                                      const std::string& here) {
  const std::vector<i64> mine = c.is_src ? c.src_decomp.to_indices() : std::vector<i64>{};
  std::vector<std::int32_t> mask_mine(mine.size(), 1);
  for (std::size_t i = 0; i < mine.size() && !sg.mask.empty(); ++i) mask_mine[i] = sg.mask[i];
  const std::vector<i64> idx = allgather_all(mine, MPI_INT64_T, c.comm);
  const std::vector<double> lon_all = allgather_all(c.is_src ? sg.lon : std::vector<double>{}, MPI_DOUBLE, c.comm);
  const std::vector<double> lat_all = allgather_all(c.is_src ? sg.lat : std::vector<double>{}, MPI_DOUBLE, c.comm);
  const std::vector<std::int32_t> mask_all = allgather_all(mask_mine, MPI_INT32_T, c.comm);
  const auto n = static_cast<std::size_t>(c.src_global);
  std::vector<double> lon(n, 0.0), lat(n, 0.0);
  std::vector<std::int32_t> mask(n, 1);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto g = static_cast<std::size_t>(idx[k]);
    lon[g] = lon_all[k], lat[g] = lat_all[k], mask[g] = mask_all[k];
  }
  const std::string& fn = cfg.scripr->callback;
  Links out;
  std::string fault, fix;
  if (c.is_dst) {
    const auto it = weight_functions.find(fn);
    const std::vector<i64> dst_idx = c.dst_decomp.to_indices();
    if (it == weight_functions.end()) {
      fault = "no weight function \"" + fn + "\" is registered on this rank of " + c.dst_comp;
      fix = "call register_weights(\"" + fn + "\", f) on every rank of the target component before enddef";
    } else {
      WeightQuery q{c.label, lon, lat, mask, dst_idx, dg.lon, dg.lat};
      try {
        out = it->second(q);
      } catch (const std::exception& e) {
        fault = "the weight function \"" + fn + "\" failed: " + e.what();
      }
      std::vector<i64> own = dst_idx;
      std::sort(own.begin(), own.end());
      const std::size_t m = out.row.size();
      if (fault.empty() && (out.col.size() != m || out.weight.size() != m))
        fault = "the weight function \"" + fn + "\" returned " + std::to_string(m) + " targets, " +
                std::to_string(out.col.size()) + " sources and " + std::to_string(out.weight.size()) + " weights";
      for (std::size_t k = 0; k < m && fault.empty(); ++k) {
        const i64 col = out.col[k], row = out.row[k];
        if (col < 0 || col >= c.src_global)
          fault = "the weight function \"" + fn + "\" returned link " + std::to_string(k) + " to source index " +
                  std::to_string(col) + ", outside [0, " + std::to_string(c.src_global) + ")";
        else if (!std::binary_search(own.begin(), own.end(), row))
          fault = "the weight function \"" + fn + "\" returned link " + std::to_string(k) + " to target index " +
                  std::to_string(row) + ", which this rank does not hold";
        if (!fault.empty()) fix = "return links (global target index, global source index, weight) for the rank's own targets";
      }
    }
    if (!fault.empty()) fault += " (" + detail::world_rank_label() + ")";
  }
  detail::agree(c.comm, [&] {
    if (!fault.empty()) throw Error("SCRIPR CALLBACK: " + fault, here, fix);
  });
  log("coupling " + c.label + ": weights from the registered function \"" + fn + "\"");
  return out;
}

// The mapping of a coupling: a weight file, weights generated here, or the identity.
// Issue 24: couplings with one weight file, the same partitions on every rank, the same ranks
// and the same options share one Remap (its weights, plans and schedules) instead of setting up
// one each. Collective over c.comm: every rank names the first earlier coupling it could share
// with (couplings are in the same order everywhere), and they share only when all name the same.
const Coupling* Component::Impl::shared_remap(const Coupling& c) const {
  int mine = INT_MAX;  // ESTUARY_SHARE_REMAPS=0 (for measurements): no sharing, still collective
  for (std::size_t k = 0; Settings::get().share_remaps && k < couplings.size() && mine == INT_MAX; ++k) {
    const Coupling& o = *couplings[k];
    if (!o.remap || o.remap_key != c.remap_key || !o.remap_shared_from.empty() || o.comm == MPI_COMM_NULL) continue;
    int same = MPI_UNEQUAL;
    check_mpi(MPI_Comm_compare(o.comm, c.comm, &same), "MPI_Comm_compare");
    if (same == MPI_CONGRUENT) mine = static_cast<int>(k);
  }
  int lo = mine, hi = mine;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, c.comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
  return lo == hi && lo != INT_MAX ? couplings[static_cast<std::size_t>(lo)].get() : nullptr;
}

void Component::Impl::setup_mapping(Coupling& c, const CouplingConfig& cfg, int src_part, int dst_part) {
  RemapOptions ro;
  ro.algorithm = "p2p";  // the split-phase transfer needs a single stage
  if (cfg.mapping) {
    ro.location = cfg.mapping->location;
    ro.order = cfg.mapping->order;
  }
  const std::string here = "enddef, " + c.label;
  // The grids named by the configuration, where this rank holds them (else empty of the right size).
  const auto side_grid = [&](bool source) {
    const GridRef& ref = source ? cfg.src_grid : cfg.dst_grid;
    const int part = source ? src_part : dst_part;
    const i64 global = source ? c.src_global : c.dst_global;
    const bool holds = source ? c.is_src : c.is_dst;
    const GridDef* g = holds ? grid(ref.name, part) : nullptr;
    int missing = holds && !g ? 1 : 0;
    // ---- OASIS grid files: a grid that no rank gave with def_grid is read from grids.nc,
    // masks.nc and areas.nc in the run folder, as OASIS3-MCT reads them for SCRIPR and CONSERV
    // (masks always, corners for SCRIPR CONSERV, areas for CONSERV).
    int given = g ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &given, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
    if (!given) {
      GridFileNeeds needs;
      needs.mask = true;
      needs.corners = detail::weights_need_corners(cfg);
      needs.area = static_cast<bool>(cfg.conserv) || (cfg.scripr && detail::runoff_options(*cfg.scripr));
      needs.context = here + ", " + (source ? "source" : "target") + " grid";
      const OasisGridFiles files = OasisGridFiles::in(opt.directory);
      Grid out = read_oasis_grid(files, ref.name, holds ? parts[static_cast<std::size_t>(part)].decomp : Decomp::empty(global),
                                 c.comm, needs);
      out.global_size = global;
      if (holds) log("coupling " + c.label + ": grid " + ref.name + " read from " + files.grids + ", " + files.masks +
                     (out.area.empty() ? "" : ", " + files.areas) + " (no def_grid)");
      return out;
    }
    // ---- end of OASIS grid files ----
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &missing, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
    if (missing)
      throw Error("grid " + ref.name + " is not defined on the partition of " +
                      (source ? cfg.src_fields[0] : cfg.dst_fields[0]) + " on every rank holding it",
                  here, "call def_grid(\"" + ref.name + "\", partition, grid) before enddef");
    Grid out;
    if (g) out = g->grid;
    out.global_size = global;
    if (!g) {
      out.dims = ref.nx > 0 && ref.ny > 0 ? std::vector<i64>{ref.nx, ref.ny} : std::vector<i64>{global};
      out.points.clear();
    }
    return out;
  };
  Links links;
  std::string weight_file;
  // Multi-weight mappings (a num_wgts 3 or 4 file, SCRIPR BICUBIC): the columns stacked over
  // the source [x, g1, g2 (, g3)], for puts with the model's gradients (see setup_gradients).
  Links stacked;
  int ncols = 1;
  if (cfg.mapping) {
    weight_file = path_in(opt.directory, cfg.mapping->file);
  } else if (cfg.scripr || !cfg.interpolation.empty()) {
    detail::WeightContext wc;
    wc.directory = opt.directory;
    wc.label = c.label;
    wc.here = here;
    wc.src_global = c.src_global;
    wc.dst_global = c.dst_global;
    wc.log = [this](const std::string& line) { log(line); };
    wc.callback = [&](const Grid& s, const Grid& d) { return callback_links(c, cfg, s, d, here); };
    detail::CouplingWeights w = detail::coupling_weights(cfg, side_grid(true), side_grid(false), c.comm, wc);
    links = std::move(w.links);
    weight_file = std::move(w.weight_file);
    ro.unmapped_value = w.unmapped_value;
    stacked = std::move(w.stacked);
    ncols = w.ncols;
  } else {
    detail::agree(c.comm, [&] {
      if (c.src_global != c.dst_global)
        throw Error("the source has " + std::to_string(c.src_global) + " points and the target " +
                        std::to_string(c.dst_global) + " but no mapping is configured",
                    here, "add MAPPING (a weight file) or SCRIPR to the coupling");
    });
    // The identity, each point's link on one rank (a block of the points per rank).
    int r = 0, p = 1;
    MPI_Comm_rank(c.comm, &r);
    MPI_Comm_size(c.comm, &p);
    for (i64 i = r * c.src_global / p; i < (r + 1) * c.src_global / p; ++i) links.add(i, i, 1.0);
  }
  if (cfg.mapping) {
    char opts[160];
    std::snprintf(opts, sizeof opts, "|%d|%d|%d|%d|%d|%d|%.17g|", src_part, dst_part, c.is_src ? 1 : 0, c.is_dst ? 1 : 0,
                  static_cast<int>(ro.location), static_cast<int>(ro.order), ro.unmapped_value);
    c.remap_key = weight_file;
    c.remap_key.append(opts).append(ro.algorithm);
    if (const Coupling* same = shared_remap(c)) {
      c.remap = std::make_unique<Remap>(same->remap->share());
      c.remap_shared_from = same->label;
      if (same->grad_remap) {
        c.ncols = same->ncols;
        c.grad_remap = std::make_unique<Remap>(same->grad_remap->share());
        c.grad_remap->prepare(c.nvalues);
      }
      log("coupling " + c.label + ": shares the remap of " + same->label + " (same weights, partitions and ranks)");
      weight_file.clear();
    }
  }
  try {
    if (c.remap) {
      // shared: nothing to read or set up
    } else if (!weight_file.empty()) {
      // Read once with the columns apart: a one-column file is the matrix itself; a
      // multi-weight one is also read folded (the Remap of puts without gradients).
      WeightReadOptions wro;
      wro.src_size = c.src_global;
      wro.dst_size = c.dst_global;
      wro.stack_columns = true;
      WeightSlice ws = read_weights(weight_file, c.comm, wro);
      if (ws.info.num_wgts > 1) {
        ncols = static_cast<int>(ws.info.num_wgts);
        stacked = std::move(ws.links);
      } else {
        links = std::move(ws.links);
        weight_file.clear();
      }
    }
    if (!c.remap_shared_from.empty()) {
      // shared above
    } else if (weight_file.empty()) {
      c.remap = std::make_unique<Remap>(links, c.src_decomp, c.dst_decomp, c.comm, ro);
    } else {
      c.remap = std::make_unique<Remap>(weight_file, c.src_decomp, c.dst_decomp, c.comm, ro);
    }
    if (ncols > 1 && c.remap_shared_from.empty()) {
      c.ncols = ncols;
      c.grad_remap = std::make_unique<Remap>(stacked, stacked_decomp(c.src_decomp, ncols), c.dst_decomp, c.comm, ro);
      c.grad_remap->prepare(c.nvalues);
    }
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {
    throw Error(e.fault(), here + (e.where().empty() ? "" : ", " + e.where()), e.fix());
  }
  c.remap->prepare(c.nvalues);
  c.remap->prepare(2 * c.nvalues);  // puts with a fractional mask: f x and f in one exchange
  if (cfg.conserv) {
    Grid sg = side_grid(true), dg = side_grid(false);
    detail::agree(c.comm, [&] {
      if ((c.is_src && sg.area.empty()) || (c.is_dst && dg.area.empty()))
        throw Error("CONSERV needs the cell areas of grids " + cfg.src_grid.name + " and " + cfg.dst_grid.name, here,
                    "give Grid::area (or corners) in def_grid");
    });
    c.conserv = std::make_unique<Conserv>(ConservSide{&c.src_decomp, sg.area, sg.mask},
                                          ConservSide{&c.dst_decomp, dg.area, dg.mask}, c.comm, cfg.conserv->method);
  }
  c.sbuf.assign(static_cast<std::size_t>(c.nvalues * c.n_src), 0.0);
  c.rbuf.assign(static_cast<std::size_t>(c.nvalues * c.n_dst), 0.0);
}


// Source side, collective over the component: the lagged record (sent as the action of time
// 0) and partial LOCTRANS accumulations of the previous run, read by the root and spread.
void Component::Impl::read_restart(Coupling& c) {
  const CouplingConfig& cfg = *c.cfg;
  const std::string path = path_in(opt.directory, cfg.restart_file);
  const std::vector<std::string> names = detail::value_names(cfg.src_fields, c.bundle);
  const i64 g = c.src_global, nv = c.nvalues;
  const bool lagged = estuary::lagged(cfg);
  // Root reads; [0, nv*g) the record, then nv*g accumulation values and one count per field.
  std::vector<double> all;
  int found_record = 0, found_acc = 0;
  std::string fault;
  if (crank == 0) {
    try {
      all.assign(static_cast<std::size_t>(2 * nv * g + static_cast<i64>(cfg.src_fields.size())), 0.0);
      std::vector<double> v;
      bool rec = lagged && !cfg.restart_file.empty(), acc = !cfg.restart_file.empty();
      for (std::size_t k = 0; k < names.size(); ++k) {
        if (rec && detail::read_restart_var(path, names[k], g, v)) std::copy(v.begin(), v.end(), all.begin() + static_cast<i64>(k) * g);
        else rec = false;
        if (acc && detail::read_restart_var(path, names[k] + "_loctrans", g, v))
          std::copy(v.begin(), v.end(), all.begin() + (nv + static_cast<i64>(k)) * g);
        else acc = false;
      }
      for (std::size_t k = 0; acc && k < cfg.src_fields.size(); ++k) {
        if (detail::read_restart_var(path, cfg.src_fields[k] + "_loctrans_count", 1, v)) all[static_cast<std::size_t>(2 * nv * g) + k] = v[0];
        else acc = false;
      }
      found_record = rec ? 1 : 0;
      found_acc = acc ? 1 : 0;
      if (lagged && !rec && !setup.no_restart)
        fault = "the lagged field " + detail::join(cfg.src_fields) + " (" + cfg.origin + ", lag " + detail::time_str(cfg.lag) +
                " s) needs its values of the previous run in the restart file " + path + ", which " +
                (std::filesystem::exists(path) ? "lacks them" : "does not exist");
    } catch (const Error& e) {
      fault = e.what();
    }
  }
  detail::agree(comm, [&] {
    if (!fault.empty()) throw Error(fault, "enddef, component " + name, "write it with a previous run, or set $NNOREST T (no_restart: true) to start from zeros");
  });
  int flags[2] = {found_record, found_acc};
  check_mpi(MPI_Bcast(flags, 2, MPI_INT, 0, comm), "MPI_Bcast");
  const Decomp& mine = c.is_src ? c.src_decomp : Decomp::empty(g);
  const i64 n = mine.size(), held = crank == 0 ? g : 0;
  Redist from_root(crank == 0 ? Decomp::stripes(g, {{0, g, 1}}) : Decomp::empty(g), mine, comm);
  std::vector<double> local(static_cast<std::size_t>(2 * nv * n));
  std::vector<Field> moves;
  for (i64 v = 0; v < 2 * nv; ++v) moves.emplace_back(Type::f64, all.data() + v * held, held, local.data() + v * n, n);
  from_root.run(moves);
  std::vector<double> counts(cfg.src_fields.size());
  if (crank == 0) std::copy(all.begin() + 2 * nv * g, all.end(), counts.begin());
  check_mpi(MPI_Bcast(counts.data(), static_cast<int>(counts.size()), MPI_DOUBLE, 0, comm), "MPI_Bcast");
  if (!c.is_src) return;
  if (flags[1] && !c.acc.empty()) {  // (a configuration changed to INSTANT drops them)
    std::copy(local.begin() + nv * n, local.end(), c.acc.begin());
    for (std::size_t k = 0; k < counts.size(); ++k) c.acc_count[k] = static_cast<int>(counts[k]);
  }
  if (lagged) {
    local.resize(static_cast<std::size_t>(nv * n));
    c.send_initial(flags[0] ? local : std::vector<double>(local.size(), 0.0));
  }
}

// Collective over the component: every coupling it sources writes, through the root, the
// lagged record and partial accumulations to its restart file (one file per name, atomically).
void Component::Impl::write_restarts() {
  std::map<std::string, std::vector<detail::RestartVar>> files;
  for (auto& cp : couplings) {
    Coupling& c = *cp;
    const CouplingConfig& cfg = *c.cfg;
    if (c.src_comp != name || cfg.restart_file.empty() || cfg.status == FieldStatus::input) continue;
    int has[2] = {c.has_restart_record ? 1 : 0, 0};
    for (int k : c.acc_count) has[1] = std::max(has[1], k > 0 ? 1 : 0);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, has, 2, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    if (!has[0] && !has[1]) continue;
    const i64 g = c.src_global, nv = c.nvalues;
    const Decomp& mine = c.is_src ? c.src_decomp : Decomp::empty(g);
    const i64 n = mine.size(), held = crank == 0 ? g : 0;
    std::vector<double> local(static_cast<std::size_t>(2 * nv * n), 0.0), all(static_cast<std::size_t>(2 * nv * held));
    if (c.has_restart_record) std::copy(c.restart_record.begin(), c.restart_record.end(), local.begin());
    if (c.is_src) std::copy(c.acc.begin(), c.acc.end(), local.begin() + nv * n);
    Redist gather = to_root(mine, g);
    std::vector<Field> moves;
    for (i64 v = 0; v < 2 * nv; ++v) moves.emplace_back(Type::f64, local.data() + v * n, n, all.data() + v * held, held);
    gather.run(moves);
    // Sized by the configuration: ranks outside the coupling hold no counts but join the sum.
    std::vector<double> counts(cfg.src_fields.size(), 0.0);
    for (std::size_t k = 0; k < c.acc_count.size(); ++k) counts[k] = c.acc_count[k];
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_DOUBLE, MPI_MAX, comm),
              "MPI_Allreduce");
    if (crank != 0) continue;
    const std::vector<std::string> names = detail::value_names(cfg.src_fields, c.bundle);
    std::vector<i64> dims;
    if (cfg.src_grid.nx > 0 && cfg.src_grid.ny > 0) dims = {cfg.src_grid.nx, cfg.src_grid.ny};
    auto& vars = files[path_in(opt.directory, cfg.restart_file)];
    for (std::size_t k = 0; k < names.size(); ++k) {
      const auto at = all.begin() + static_cast<i64>(k) * g;
      if (has[0]) vars.push_back({names[k], std::vector<double>(at, at + g), dims});
      if (has[1]) vars.push_back({names[k] + "_loctrans", std::vector<double>(at + nv * g, at + nv * g + g), dims});
    }
    if (has[1])
      for (std::size_t k = 0; k < cfg.src_fields.size(); ++k) vars.push_back({cfg.src_fields[k] + "_loctrans_count", {counts[k]}, {}});
  }
  std::string fault;
  if (crank == 0) {
    try {
      for (const auto& [path, vars] : files) {
        detail::write_restart(path, vars);
        log("restart written: " + path);
      }
    } catch (const Error& e) {
      fault = e.what();
    }
  }
  detail::agree(comm, [&] {
    if (!fault.empty()) throw Error(fault, "terminate, component " + name);
  });
}

Info Component::put(int var, double time, std::span<const double> values) { return put(var, time, values, PutExtras{}); }

Info Component::put(int var, double time, std::span<const double> values, const PutExtras& extra) {
  Impl& m = *impl_;
  if (!m.opt.coupled) return Info::ok;  // OASIS: nothing to do for an uncoupled component
  if (!m.defined || m.terminated) throw Error("put before enddef or after terminate", m.where());
  if (m.opt.setup_only)
    throw Error("put on a component set up only to be inspected", m.where(), "construct it without setup_only");
  if (var < 0 || var >= static_cast<int>(m.vars.size()) || m.vars[static_cast<std::size_t>(var)].dir != Direction::out)
    throw Error("put of variable id " + std::to_string(var) + ", which is not an output field of this rank", m.where());
  Info info = Info::ok;
  for (auto [c, k] : m.vars[static_cast<std::size_t>(var)].uses) {
    const detail::SideClock before = c->src_clock;  // timeline
    const double t0 = MPI_Wtime();
    const Info i = c->put(k, time, values, extra);
    const double t1 = MPI_Wtime();
    info = strongest(info, i);  // several targets: the strongest action
    c->src_timers.puts += 1;
    c->src_timers.put_s += t1 - t0;
    // --- timeline: one event per coupling the field goes to ---
    if (m.timeline)
      m.timeline->record(detail::TimelineKind::put, static_cast<int>(c->cfg - m.setup.couplings.data()), k, time, t0, t1,
                         c->src_clock - before, i);
  }
  return info;
}

Info Component::get(int var, double time, std::span<double> values) {
  Impl& m = *impl_;
  if (!m.opt.coupled) return Info::ok;
  if (!m.defined || m.terminated) throw Error("get before enddef or after terminate", m.where());
  if (m.opt.setup_only)
    throw Error("get on a component set up only to be inspected", m.where(), "construct it without setup_only");
  if (var < 0 || var >= static_cast<int>(m.vars.size()) || m.vars[static_cast<std::size_t>(var)].dir != Direction::in)
    throw Error("get of variable id " + std::to_string(var) + ", which is not an input field of this rank", m.where());
  Info info = Info::ok;
  for (auto [c, k] : m.vars[static_cast<std::size_t>(var)].uses) {
    const detail::SideClock before = c->dst_clock;  // timeline
    const double t0 = MPI_Wtime();
    info = c->get(k, time, values);
    const double t1 = MPI_Wtime();
    c->dst_timers.gets += 1;
    c->dst_timers.get_s += t1 - t0;
    // --- timeline ---
    if (m.timeline)
      m.timeline->record(detail::TimelineKind::get, static_cast<int>(c->cfg - m.setup.couplings.data()), k, time, t0, t1,
                         c->dst_clock - before, info);
  }
  return info;
}

std::vector<CouplingSchedules> Component::schedules() const {
  const Impl& m = *impl_;
  if (!m.defined) throw Error("schedules before enddef", m.where(), "call enddef first");
  std::vector<CouplingSchedules> out;
  for (const auto& cp : m.couplings) {
    const Coupling& c = *cp;
    CouplingSchedules s;
    s.label = c.label;
    s.src_component = c.src_comp;
    s.dst_component = c.dst_comp;
    s.values = c.nvalues;
    s.member = c.comm != MPI_COMM_NULL;
    s.shares_remap_of = c.remap_shared_from;
    if (c.remap) {
      s.location = c.remap->options().location == RemapLocation::src ? "src" : "dst";
      s.order = c.remap->options().order == RemapOrder::bfb ? "bfb" : "sum";
    }
    if (s.member && c.remap) {
      // The Remap's peers are ranks of the coupling's communicator: report world ranks.
      MPI_Group cg = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
      check_mpi(MPI_Comm_group(c.comm, &cg), "MPI_Comm_group");
      check_mpi(MPI_Comm_group(m.world, &wg), "MPI_Comm_group");
      const auto to_world = [&](int peer) {
        int w = MPI_UNDEFINED;
        check_mpi(MPI_Group_translate_ranks(cg, 1, &peer, wg, &w), "MPI_Group_translate_ranks");
        return w;
      };
      for (const Remap::Exchange& x : c.remap->exchanges()) {
        const Schedule& sch = x.redist->schedule();
        CouplingExchange e;
        e.name = x.name;
        e.algorithm = sch.algorithm;
        e.stats = sch.stats();
        for (std::size_t k = 0; k < sch.stages.size(); ++k) {
          for (const Message& msg : sch.stages[k].sends) e.sends.push_back({static_cast<int>(k), to_world(msg.peer), msg.count()});
          for (const Message& msg : sch.stages[k].recvs) e.recvs.push_back({static_cast<int>(k), to_world(msg.peer), msg.count()});
        }
        s.exchanges.push_back(std::move(e));
      }
      MPI_Group_free(&cg);
      MPI_Group_free(&wg);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<FieldTimers> Component::timers() const {
  std::vector<FieldTimers> out;
  for (const auto& c : impl_->couplings) {
    if (c->is_src) out.push_back(c->src_timers);
    if (c->is_dst) out.push_back(c->dst_timers);
  }
  return out;
}

double Component::last_source_integral(int var) const {
  for (auto [c, k] : impl_->vars.at(static_cast<std::size_t>(var)).uses)
    if (!c->last_ss.empty()) {
      i64 first = 0;
      for (int j = 0; j < k; ++j) first += c->bundle[static_cast<std::size_t>(j)];
      return c->last_ss[static_cast<std::size_t>(first)];
    }
  return 0.0;
}

void Component::terminate() {
  Impl& m = *impl_;
  if (m.terminated) return;
  m.terminated = true;
  // A partner still finishing its couplings may wait up to the time-out twice for each of them
  // (a put one period ahead, then terminate's own wait) before it arrives: the bound leaves it
  // that time, and as much again.
  const double terminate_limit = 2 * m.setup.timeout * static_cast<double>(m.setup.couplings.size() + 1);
  if (m.defined) {
    // --- timeline: the end of the last coupling exchanges, then the restarts ---
    const auto spent = [&] {
      detail::SideClock all;
      for (auto& c : m.couplings) all = all + c->src_clock + c->dst_clock;
      return all;
    };
    const detail::SideClock before = spent();
    const double t0 = MPI_Wtime();
    // Bounded: a partner component that died (or never calls terminate) ends this wait after
    // the coupling time-out, with an error, instead of holding this component forever.
    detail::agree_within(m.term, terminate_limit, "terminate of component " + m.name, [&] {
      for (auto& c : m.couplings)
        if (c->comm != MPI_COMM_NULL) c->finish_all();
    });
    const double t1 = MPI_Wtime();
    if (m.timeline) m.timeline->record(detail::TimelineKind::terminate, -1, 0, m.setup.runtime, t0, t1, spent() - before, Info::ok);
    m.write_restarts();
    if (m.timeline) m.timeline->record(detail::TimelineKind::restart, -1, 0, m.setup.runtime, t1, MPI_Wtime(), {}, Info::ok);
    // Timer summary: the largest over the component's ranks, per coupling side.
    for (auto& c : m.couplings) {
      for (int side = 0; side < 2; ++side) {
        const bool here = c->comm != MPI_COMM_NULL && (side == 0 ? c->is_src : c->is_dst);
        const std::string& comp = side == 0 ? c->src_comp : c->dst_comp;
        if (comp != m.name) continue;
        const FieldTimers& t = side == 0 ? c->src_timers : c->dst_timers;
        double v[6] = {here ? t.put_s : 0, here ? t.get_s : 0, here ? t.wait_s : 0, here ? t.remap_s : 0,
                       static_cast<double>(here ? t.puts : 0), static_cast<double>(here ? t.gets : 0)};
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_DOUBLE, MPI_MAX, m.comm), "MPI_Allreduce");
        char line[512];
        std::snprintf(line, sizeof line,
                      "timers %-40s calls %6.0f  put %.4f s  get %.4f s  wait %.4f s  transfer+remap %.4f s (max over ranks)",
                      t.field.c_str(), v[4] + v[5], v[0], v[1], v[2], v[3]);
        m.log(line);
      }
    }
    // --- timeline: written by the component's ranks together, after everything it records ---
    if (m.timeline) {
      const std::string fault = m.timeline->write(m.opt.directory);
      const std::string path = m.timeline->path(m.opt.directory);
      if (fault.empty()) {
        unsigned long long n[2] = {m.timeline->events(), m.timeline->dropped()};
        MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, m.comm);
        m.log("timeline written: " + path + " (" + std::to_string(n[0]) + " events" +
              (n[1] ? ", " + std::to_string(n[1]) + " dropped past ESTUARY_TIMELINE_MAX_EVENTS" : "") + ")");
      } else {  // diagnostics only: the run's results and restarts are written, so it goes on
        m.log("timeline not written: " + fault);
        if (m.crank == 0) std::cerr << "estuary: component " << m.name << ": timeline not written: " << fault << "\n";
      }
      m.timeline.reset();
    }
  }
  m.couplings.clear();
  detail::agree_within(m.term, terminate_limit, "terminate of component " + m.name, [] {});
}

// ---- OASIS3-MCT's coupling communicator, run-time queries and communicators between
// components (oasis_set_couplcomm, oasis_put_inquire, oasis_get_ncpl, oasis_get_freqs,
// oasis_get_intercomm, oasis_get_intracomm, oasis_get_multi_intracomm, oasis_get/set_debug) ----

void Component::set_couplcomm(MPI_Comm couplcomm) {
  Impl& m = *impl_;
  if (!m.opt.coupled) return;  // OASIS: nothing to do for an uncoupled component
  if (m.defined)
    throw Error("set_couplcomm after enddef", m.where(), "declare the coupling ranks before enddef, as OASIS requires");
  int rank = 0, size = 0;
  if (couplcomm != MPI_COMM_NULL) {
    int inter = 0;
    check_mpi(MPI_Comm_test_inter(couplcomm, &inter), "MPI_Comm_test_inter");
    if (inter) throw Error("set_couplcomm with an intercommunicator", m.where(), "give an intracommunicator of this component's ranks");
    // Every member must be a rank of this component: the coupling ranks are a subset of it.
    MPI_Group g = MPI_GROUP_NULL, cg = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(couplcomm, &g), "MPI_Comm_group");
    check_mpi(MPI_Comm_group(m.comm, &cg), "MPI_Comm_group");
    MPI_Group_size(g, &size);
    std::vector<int> in(static_cast<std::size_t>(size)), out(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) in[static_cast<std::size_t>(i)] = i;
    check_mpi(MPI_Group_translate_ranks(g, size, in.data(), cg, out.data()), "MPI_Group_translate_ranks");
    MPI_Group_free(&g);
    MPI_Group_free(&cg);
    const int foreign = static_cast<int>(std::count(out.begin(), out.end(), MPI_UNDEFINED));
    if (foreign > 0)
      throw Error("set_couplcomm with a communicator of " + std::to_string(size) + " ranks, " + std::to_string(foreign) +
                      " of them outside component " + m.name,
                  m.where(), "give a communicator of this component's ranks (create_couplcomm splits its local communicator)");
    check_mpi(MPI_Comm_rank(couplcomm, &rank), "MPI_Comm_rank");
  }
  m.couplcomm_set = true;
  m.coupling = couplcomm != MPI_COMM_NULL;
  m.user_couplcomm = couplcomm;
  m.couplcomm_rank = rank;
  m.couplcomm_size = size;
}

MPI_Comm Component::coupling_comm() const { return impl_->couplcomm_set ? impl_->user_couplcomm : impl_->comm; }
bool Component::coupling_rank() const { return impl_->coupling; }

// enddef's part, collective over the world: checks the coupling ranks, makes their
// communicator and the table of every component's coupling root and size.
void Component::Impl::oasis_enddef() {
  int set[2] = {couplcomm_set ? 1 : 0, couplcomm_set ? 1 : 0};  // min, max over the component
  set[1] = -set[1];
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, set, 2, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  const bool mixed = set[0] != -set[1];
  detail::agree(world, [&] {
    if (mixed)
      throw Error("set_couplcomm was called on some ranks of component " + name + " and not on others", "enddef, " + where(),
                  "call it (or create_couplcomm) on every rank of the component, with MPI_COMM_NULL on the ranks that do not couple");
    if (!coupling && !vars.empty())
      throw Error("field " + vars.front().name + " is defined on a rank outside the coupling communicator (set_couplcomm)",
                  "enddef, " + where(), "define the fields on the coupling ranks only");
  });
  check_mpi(MPI_Comm_split(comm, coupling ? 0 : MPI_UNDEFINED, couplcomm_set ? couplcomm_rank : crank, &cpl),
            "MPI_Comm_split");
  int csize = 0;
  if (cpl != MPI_COMM_NULL) MPI_Comm_size(cpl, &csize);
  detail::agree(world, [&] {
    if (couplcomm_set && coupling && csize != couplcomm_size)
      throw Error("the communicator given to set_couplcomm has " + std::to_string(couplcomm_size) + " ranks, but " +
                      std::to_string(csize) + " ranks of component " + name + " gave one",
                  "enddef, " + where(), "give every coupling rank the same communicator (MPI_COMM_NULL on the others)");
  });
  int crank_cpl = -1;
  if (cpl != MPI_COMM_NULL) MPI_Comm_rank(cpl, &crank_cpl);
  std::vector<int> all(static_cast<std::size_t>(wsize));
  check_mpi(MPI_Allgather(&crank_cpl, 1, MPI_INT, all.data(), 1, MPI_INT, world), "MPI_Allgather");
  comp_order.clear();
  for (const std::string& n : world_names)
    if (std::find(comp_order.begin(), comp_order.end(), n) == comp_order.end()) comp_order.push_back(n);
  comp_root.assign(comp_order.size(), -1);
  comp_size.assign(comp_order.size(), 0);
  for (int r = 0; r < wsize; ++r) {
    const auto i = static_cast<std::size_t>(
        std::find(comp_order.begin(), comp_order.end(), world_names[static_cast<std::size_t>(r)]) - comp_order.begin());
    if (all[static_cast<std::size_t>(r)] >= 0) ++comp_size[i];
    if (all[static_cast<std::size_t>(r)] == 0) comp_root[i] = r;
  }
  if (peer == MPI_COMM_NULL) check_mpi(MPI_Comm_dup(world, &peer), "MPI_Comm_dup");
  if (couplcomm_set)
    log("coupling communicator (set_couplcomm): " + std::to_string(comp_size[static_cast<std::size_t>(
                                                        std::find(comp_order.begin(), comp_order.end(), name) -
                                                        comp_order.begin())]) +
        " of the component's ranks take part in the coupling");
}

void Component::Impl::require_coupling(const char* routine) const {
  if (!defined) throw Error(std::string(routine) + " before enddef", where(), "call it after enddef, as OASIS requires");
  if (!opt.coupled)
    throw Error(std::string(routine) + " on an uncoupled component (ComponentOptions::coupled)", where());
  if (!coupling)
    throw Error(std::string(routine) + " on a rank outside the coupling communicator (set_couplcomm)", where(),
                "call it on the coupling ranks only (OASIS aborts there too)");
}

const Component::Impl::Var& Component::Impl::var_of(int var, const char* routine) const {
  if (var < 0 || var >= static_cast<int>(vars.size()))
    throw Error(std::string(routine) + " of variable id " + std::to_string(var) + ", which this rank did not define", where(),
                "pass an id returned by def_var on this rank");
  return vars[static_cast<std::size_t>(var)];
}

int Component::Impl::comp_index(const std::string& comp, const char* routine) const {
  const auto it = std::find(comp_order.begin(), comp_order.end(), comp);
  if (it == comp_order.end()) {
    std::string known;
    for (const std::string& n : comp_order) known += (known.empty() ? "" : ", ") + n;
    throw Error(std::string(routine) + ": no component \"" + comp + "\" in this run", where(), "components: " + known);
  }
  const int i = static_cast<int>(it - comp_order.begin());
  if (comp_root[static_cast<std::size_t>(i)] < 0)
    throw Error(std::string(routine) + ": component " + comp + " has no coupling ranks", where(),
                "its set_couplcomm left every rank out");
  return i;
}

Info Component::put_inquire(int var, double time) const {
  const Impl& m = *impl_;
  m.require_coupling("put_inquire");
  const Impl::Var& v = m.var_of(var, "put_inquire");
  if (v.dir != Direction::out)
    throw Error("put_inquire of field " + v.name + ", an input field", m.where(), "inquire about output fields only (as OASIS)");
  Info info = Info::ok;
  for (auto [c, k] : v.uses) {
    info = strongest(info, c->put_inquire(k, time));  // several targets: as put combines them
  }
  return info;
}

int Component::get_ncpl(int var) const {
  impl_->require_coupling("get_ncpl");
  return static_cast<int>(get_freqs(var, impl_->var_of(var, "get_ncpl").dir).size());
}

std::vector<double> Component::get_freqs(int var, Direction direction) const {
  const Impl& m = *impl_;
  m.require_coupling("get_freqs");
  const Impl::Var& v = m.var_of(var, "get_freqs");
  if (v.dir != direction)
    throw Error("get_freqs of field " + v.name + " as an " + (direction == Direction::out ? "output" : "input") +
                    " field: it is an " + (v.dir == Direction::out ? "output" : "input") + " field",
                m.where(), "pass the direction the field was defined with (OASIS_Out or OASIS_In)");
  std::vector<double> periods;
  std::vector<const Coupling*> seen;  // a coupling once, whatever the positions the field takes in it
  for (auto [c, k] : v.uses)
    if (std::find(seen.begin(), seen.end(), c) == seen.end()) {
      seen.push_back(c);
      periods.push_back(c->cfg->period);
    }
  return periods;
}

MPI_Comm Component::get_intercomm(const std::string& other) const {
  const Impl& m = *impl_;
  m.require_coupling("get_intercomm");
  const int me = m.comp_index(m.name, "get_intercomm"), o = m.comp_index(other, "get_intercomm");
  if (me == o)
    throw Error("get_intercomm: \"" + other + "\" is this component", m.where(), "name another component");
  // A tag per pair of components: leaders of different pairs never mix their messages.
  const int n = static_cast<int>(m.comp_order.size());
  const int tag = 1000 + std::min(me, o) * n + std::max(me, o);
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Intercomm_create(m.cpl, 0, m.peer, m.comp_root[static_cast<std::size_t>(o)], tag, &out),
            "MPI_Intercomm_create");
  return out;
}

MPI_Comm Component::get_intracomm(const std::string& other) const {
  MPI_Comm inter = get_intercomm(other), out = MPI_COMM_NULL;
  const Impl& m = *impl_;
  const bool high = m.comp_index(m.name, "get_intracomm") > m.comp_index(other, "get_intracomm");
  check_mpi(MPI_Intercomm_merge(inter, high ? 1 : 0, &out), "MPI_Intercomm_merge");
  MPI_Comm_free(&inter);
  return out;
}

MPI_Comm Component::get_multi_intracomm(const std::vector<std::string>& names, std::vector<int>* root_ranks) const {
  const Impl& m = *impl_;
  const char* routine = "get_multi_intracomm";
  m.require_coupling(routine);
  const int me = m.comp_index(m.name, routine);
  std::vector<int> members;  // component indices
  bool mine = false;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string& n = names[k];
    if (n.find_first_not_of(' ') == std::string::npos) continue;  // blank: skipped, as OASIS
    for (std::size_t j = k + 1; j < names.size(); ++j)
      if (names[j] == n) throw Error(std::string(routine) + ": component " + n + " named twice", m.where());
    const int i = m.comp_index(n, routine);
    mine = mine || i == me;
    members.push_back(i);
  }
  if (!mine)
    throw Error(std::string(routine) + ": the names do not include this component, " + m.name, m.where(),
                "list every component of the new communicator, this one included (as OASIS)");
  if (members.size() < 2)
    throw Error(std::string(routine) + ": fewer than two components named", m.where(), "name this component and at least one other");
  std::sort(members.begin(), members.end());
  // As OASIS: the group grows one component at a time, in the components' order; the group so
  // far (led by the first component's root) meets the next component, and the merge puts it
  // last. Components not yet in the group wait for their turn.
  MPI_Comm group = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(m.cpl, &group), "MPI_Comm_dup");
  for (std::size_t k = 1; k < members.size(); ++k) {
    const int n = members[k];
    if (me > n) continue;
    const int remote = me == n ? m.comp_root[static_cast<std::size_t>(members.front())] : m.comp_root[static_cast<std::size_t>(n)];
    MPI_Comm inter = MPI_COMM_NULL;
    check_mpi(MPI_Intercomm_create(group, 0, m.peer, remote, 20000 + n, &inter), "MPI_Intercomm_create");
    MPI_Comm_free(&group);
    check_mpi(MPI_Intercomm_merge(inter, me == n ? 1 : 0, &group), "MPI_Intercomm_merge");
    MPI_Comm_free(&inter);
  }
  if (root_ranks) {
    root_ranks->assign(names.size(), -1);
    int at = 0;
    for (int i : members) {
      for (std::size_t k = 0; k < names.size(); ++k)
        if (names[k] == m.comp_order[static_cast<std::size_t>(i)]) (*root_ranks)[k] = at;
      at += m.comp_size[static_cast<std::size_t>(i)];
    }
  }
  return group;
}

int Component::debug_level() const { return impl_->debug >= 0 ? impl_->debug : impl_->setup.log_level; }

void Component::set_debug_level(int level) {
  if (level < 0) throw Error("set_debug_level(" + std::to_string(level) + ")", impl_->where(), "give a level of 0 or more");
  impl_->debug = level;
}

void Component::log_error(const std::string& message) const {
  const Impl& m = *impl_;
  if (m.log_path.empty()) return;
  // Any rank appends its own line (the log's other lines come from the component's root).
  if (std::FILE* f = std::fopen(m.log_path.c_str(), "a")) {
    std::fprintf(f, "error on %s: %s\n", detail::world_rank_label().c_str(), message.c_str());
    std::fclose(f);
  }
}

}  // namespace estuary
