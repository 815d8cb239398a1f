// Component: the coupler's restart files (LAG and partial LOCTRANS accumulations), read at
// enddef and written at terminate, in parallel through the I/O layer (couple_io.hpp): each rank
// reads and writes its own points of arrays ordered by global index, so a run restarts on any
// process count.
#include "couple/component_impl.hpp"

namespace estuary {

namespace {
// One value (a LOCTRANS count) in a restart file: held by the component's rank 0.
Decomp scalar_on_root(int crank) { return crank == 0 ? Decomp::stripes(1, {{0, 1, 1}}) : Decomp::empty(1); }
}  // namespace

// Source side, collective over the component: the lagged record (sent as the action of time
// 0) and partial LOCTRANS accumulations of the previous run, each rank reading its points.
void Component::Impl::read_restart(Coupling& c) {
  const CouplingConfig& cfg = *c.cfg;
  const std::string path = path_in(opt.directory, cfg.restart_file);
  const std::vector<std::string> names = detail::value_names(cfg.src_fields, c.bundle);
  const i64 g = c.src_global, nv = c.nvalues;
  const bool lagged = estuary::lagged(cfg);
  const Decomp& mine = c.is_src ? c.src_decomp : Decomp::empty(g);
  const i64 n = mine.size();
  // [0, nv*n) the record, then nv*n accumulation values; one count per field (rank 0 reads).
  std::vector<double> local(static_cast<std::size_t>(2 * nv * n), 0.0), counts(cfg.src_fields.size(), 0.0);
  int found_record = 0, found_acc = 0;
  std::string fault;
  try {
    detail::RestartReader file(cfg.restart_file.empty() ? std::string() : path, comm);
    const auto at = [&](i64 v) { return std::span<double>(local).subspan(static_cast<std::size_t>(v * n), static_cast<std::size_t>(n)); };
    bool rec = lagged && file.exists(), acc = file.exists();
    for (std::size_t k = 0; k < names.size(); ++k) {
      const i64 ki = static_cast<i64>(k);
      rec = rec && file.read(names[k], mine, at(ki));
      acc = acc && file.read(names[k] + "_loctrans", mine, at(nv + ki));
    }
    const Decomp one = scalar_on_root(crank);
    for (std::size_t k = 0; acc && k < cfg.src_fields.size(); ++k)
      acc = file.read(cfg.src_fields[k] + "_loctrans_count", one, std::span<double>(counts).subspan(k, crank == 0 ? 1 : 0));
    found_record = rec ? 1 : 0;
    found_acc = acc ? 1 : 0;
    if (lagged && !rec && !setup.no_restart)
      fault = "the lagged field " + detail::join(cfg.src_fields) + " (" + cfg.origin + ", lag " + detail::time_str(cfg.lag) +
              " s) needs its values of the previous run in the restart file " + path + ", which " +
              (file.exists() ? "lacks them" : "does not exist");
  } catch (const Error& e) {  // the I/O layer's errors are agreed: every rank has one
    fault = e.what();
  }
  detail::agree(comm, [&] {
    if (!fault.empty()) throw Error(fault, "enddef, component " + name, "write it with a previous run, or set $NNOREST T (no_restart: true) to start from zeros");
  });
  check_mpi(MPI_Bcast(counts.data(), static_cast<int>(counts.size()), MPI_DOUBLE, 0, comm), "MPI_Bcast");
  if (!c.is_src) return;
  if (found_acc && !c.acc.empty()) {  // (a configuration changed to INSTANT drops them)
    std::copy(local.begin() + nv * n, local.end(), c.acc.begin());
    for (std::size_t k = 0; k < counts.size(); ++k) c.acc_count[k] = static_cast<int>(counts[k]);
  }
  if (lagged) {
    local.resize(static_cast<std::size_t>(nv * n));
    c.send_initial(found_record ? local : std::vector<double>(local.size(), 0.0));
  }
}

// Collective over the component: every coupling it sources writes the lagged record and partial
// accumulations to its restart file (one file per name, atomically), each rank its points.
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
    const i64 g = c.src_global;
    const Decomp& mine = c.is_src ? c.src_decomp : Decomp::empty(g);
    const auto n = static_cast<std::size_t>(mine.size());
    // Sized by the configuration: ranks outside the coupling hold no counts but join the sum.
    std::vector<double> counts(cfg.src_fields.size(), 0.0);
    for (std::size_t k = 0; k < c.acc_count.size(); ++k) counts[k] = c.acc_count[k];
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_DOUBLE, MPI_MAX, comm),
              "MPI_Allreduce");
    const std::vector<std::string> names = detail::value_names(cfg.src_fields, c.bundle);
    std::vector<i64> dims;
    if (cfg.src_grid.nx > 0 && cfg.src_grid.ny > 0) dims = {cfg.src_grid.nx, cfg.src_grid.ny};
    auto& vars = files[path_in(opt.directory, cfg.restart_file)];
    for (std::size_t k = 0; k < names.size(); ++k) {
      // This rank's points of value field k: zeros where it holds no record or accumulation.
      const auto part = [&](const std::vector<double>& from, bool held) {
        return held ? std::vector<double>(from.begin() + static_cast<i64>(k * n), from.begin() + static_cast<i64>((k + 1) * n))
                    : std::vector<double>(n, 0.0);
      };
      if (has[0]) vars.push_back({names[k], part(c.restart_record, c.has_restart_record), mine, dims, cfg.src_grid.name});
      if (has[1]) vars.push_back({names[k] + "_loctrans", part(c.acc, c.is_src && !c.acc.empty()), mine, dims, cfg.src_grid.name});
    }
    if (has[1])
      for (std::size_t k = 0; k < cfg.src_fields.size(); ++k)
        vars.push_back({cfg.src_fields[k] + "_loctrans_count", crank == 0 ? std::vector<double>{counts[k]} : std::vector<double>{},
                        scalar_on_root(crank), {}, ""});
  }
  for (const auto& [path, vars] : files) {
    try {
      detail::write_restart(path, vars, comm);
    } catch (const Error& e) {  // agreed by the I/O layer over the component
      throw Error(e.fault(), e.where() + ", terminate, component " + name, e.fix());
    }
    log("restart written: " + path);
  }
}

}  // namespace estuary
