// Component: the coupler's restart files (LAG and partial LOCTRANS accumulations), read at
// enddef and written at terminate.
#include "couple/component_impl.hpp"

namespace estuary {

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

}  // namespace estuary
