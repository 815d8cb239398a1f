// Component: definitions, end of definition (matching with the configuration and setting up
// every coupling), put/get dispatch and termination (restarts, timers).
#include "couple/component_impl.hpp"

namespace estuary {

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

std::string Component::Impl::config_path() const {
  if (!opt.config.empty()) return opt.config;
  if (const auto& env = Settings::get().config) return *env;
  if (std::filesystem::exists(path_in(opt.directory, "estuary.yaml"))) return path_in(opt.directory, "estuary.yaml");
  return path_in(opt.directory, "namcouple");
}

void Component::Impl::read_config() {
  const std::string path = config_path();
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
      // The peers are ranks of each exchange's communicator (the coupling's, or one component's
      // for an exchange staged within it): report world ranks.
      MPI_Group cg = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
      check_mpi(MPI_Comm_group(m.world, &wg), "MPI_Comm_group");
      const auto to_world = [&](int peer) {
        int w = MPI_UNDEFINED;
        check_mpi(MPI_Group_translate_ranks(cg, 1, &peer, wg, &w), "MPI_Group_translate_ranks");
        return w;
      };
      for (const Remap::Exchange& x : c.remap->exchanges()) {
        if (cg != MPI_GROUP_NULL) MPI_Group_free(&cg);
        check_mpi(MPI_Comm_group(x.redist->plan().comm(), &cg), "MPI_Comm_group");
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
      if (cg != MPI_GROUP_NULL) MPI_Group_free(&cg);
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

}  // namespace estuary
