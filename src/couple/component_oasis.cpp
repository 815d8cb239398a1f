// Component: OASIS3-MCT's coupling communicator, run-time queries and communicators between
// components.
#include "couple/component_impl.hpp"

namespace estuary {

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

bool Component::in_configuration(const std::string& field) const {
  const Impl& m = *impl_;
  const CouplingSetup* s = &m.setup;
  if (!m.defined) {
    // enddef reads the configuration (collectively); before it, this rank reads it alone. A file
    // it cannot read says nothing here: enddef then reports it on every rank.
    if (!m.early_setup) {
      try {
        m.early_setup = read_coupling_config(m.config_path());
      } catch (const Error&) {
        return true;
      }
    }
    s = &*m.early_setup;
  }
  for (const CouplingConfig& c : s->couplings)
    for (const auto* list : {&c.src_fields, &c.dst_fields})
      if (std::find(list->begin(), list->end(), field) != list->end()) return true;
  return false;
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
