// Output: temporal operations on the model side, remap-and-write to D writers, CF files.
//
// Both modes share one structure: a "transfer communicator" (xcomm) holding the model ranks and
// the writers, one Redist per source decomposition from the model layout to contiguous slabs of
// the file's global array on the writers, and the same file code on the writers. They differ
// only in who drives the writers: in serverless mode the model ranks themselves, synchronously;
// in server mode a loop on the dedicated ranks that follows control messages from model rank 0.
#include "io/output_impl.hpp"

#include "common/checked.hpp"

namespace estuary::io {

// ---- Output::Impl, model side: records handed to the writers, commands, close ----

void Output::Impl::emit(Var& v, const double* values, double time, double tb0, double tb1) {
  Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
  const i64 record = v.has_time ? v.record++ : -1;
  const double t0 = MPI_Wtime();
  // A view (zoom, levels) sends the values it picks from the field's.
  auto source = [&](Transfer& t) {
    if (!t.view || !model) return values;
    t.picked.resize(t.pick.size());
    for (std::size_t k = 0; k < t.pick.size(); ++k) t.picked[k] = values[t.pick[k]];
    return static_cast<const double*>(t.picked.data());
  };
  Transfer* upper = v.transfer2 >= 0 ? &transfers[static_cast<std::size_t>(v.transfer2)] : nullptr;
  if (!server_mode) {
    tr.redist->run({Field(Type::f64, source(tr), tr.local_n, tr.slab.data(), static_cast<i64>(tr.slab.size()))});
    if (upper)
      upper->redist->run(
          {Field(Type::f64, source(*upper), upper->local_n, upper->slab.data(), static_cast<i64>(upper->slab.size()))});
    stats.transfer_s += MPI_Wtime() - t0;
    // A writer's failure becomes every rank's error instead of a hang in the next collective.
    or_fail([&] {
      if (writer) write_record(v, record, time, tb0, tb1);
    });
  } else {
    // The upper levels' transfer belongs to this variable alone and moves in step with `tr`.
    const int slot = static_cast<int>(tr.next_slot++ % static_cast<i64>(tr.slots.size()));
    for (Transfer* t : {&tr, upper}) {
      if (!t) continue;
      if (t->busy[static_cast<std::size_t>(slot)]) t->slots[static_cast<std::size_t>(slot)].finish();
      t->slots[static_cast<std::size_t>(slot)].start({Field(Type::f64, source(*t), t->local_n, nullptr, 0)});
      t->busy[static_cast<std::size_t>(slot)] = true;
    }
    if (model_rank == 0) {
      Ctrl c;
      c.kind = kRecord;
      c.var = static_cast<int>(&v - vars.data());
      c.slot = slot;
      c.record = record;
      c.time = time;
      c.tb0 = tb0;
      c.tb1 = tb1;
      for (int s : server_xranks)
        estuary::detail::check_mpi(MPI_Send(&c, sizeof c, MPI_BYTE, s, kTagCtrl, ctrl), "MPI_Send");
    }
    stats.transfer_s += MPI_Wtime() - t0;
  }
  stats.records_handed_over += 1;
}

void Output::Impl::drain_slots() {
  for (Transfer& tr : transfers)
    for (std::size_t k = 0; k < tr.busy.size(); ++k)
      if (tr.busy[k]) {
        tr.slots[k].finish();
        tr.busy[k] = false;
      }
}

std::string Output::Impl::command_servers(int kind, bool fault) {
  std::string error;
  if (model_rank == 0) {
    Ctrl c;
    c.kind = kind;
    c.fault = fault ? 1 : 0;
    for (int s : server_xranks)
      estuary::detail::check_mpi(MPI_Send(&c, sizeof c, MPI_BYTE, s, kTagCtrl, ctrl), "MPI_Send");
    bool ok = true;
    for (int s : server_xranks) {
      int ack = 0;
      estuary::detail::check_mpi(MPI_Recv(&ack, 1, MPI_INT, s, kTagAck, ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
      ok = ok && ack == 1;
    }
    if (!ok) poll_server_error(true);
    error = server_error;
  }
  return share_from_root(error);
}

void Output::Impl::do_close(bool fault) {
  if (closed) return;
  closed = true;
  if (!defined) {
    restore_handler();
    return;
  }
  const bool quiet = fault;  // called on an error path: report nothing more
  fault = fault || !failure.empty();
  std::string error;
  if (server_mode) {
    drain_slots();
    error = command_servers(kClose, fault);
  } else {
    // Every model rank returns only once the files are complete on disk (the agreement).
    try {
      estuary::detail::agree(xcomm, [&] { close_files(fault); });
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  restore_handler();
  if (!error.empty() && failure.empty()) failure = error;
  if (!quiet && !failure.empty())
    throw Error("the output failed: " + failure, "closing on " + where_rank(),
                "the records completed before the failure are in the files");
}

Output::Output(const OutputConfig& config, MPI_Comm comm) : impl_(std::make_unique<Impl>()) {
  Impl& x = *impl_;
  x.cfg = config;
  x.clock = CalendarClock(config.calendar, config.reference_time);
  x.server_mode = config.mode == Mode::server;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The configuration decides the writers, the files and every collective that follows.
  estuary::detail::agree_same(comm, "output configuration (" + config.source + ")", describe(config));
  rename_fields(x.cfg);  // files on another grid take their fields' remapped copies (io/regrid.hpp)
  if (config.writers < 0)
    throw Error("writers must be at least 1 (0: chosen automatically)", "config " + config.source + ", key output.writers");
  if (config.buffer_records < 0)
    throw Error("buffer_records must be at least 1 (0: chosen automatically)",
                "config " + config.source + ", key output.buffer_records");
  if (!have_pnetcdf() && std::min(config.writers, size) > 1)
    for (const FileConfig& f : config.files)
      if (f.format != Format::netcdf4)
        throw Error("PnetCDF is not built in: file \"" + f.name + "\" in a classic format needs it with " +
                        std::to_string(config.writers) + " writers",
                    "config " + config.source + ", key output.writers",
                    "use writers: 1 or format: netcdf4, or build estuary with PnetCDF (ESTUARY_WITH_PNETCDF)");
  estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.xcomm), "MPI_Comm_dup");
  if (x.server_mode) {
    // The servers split off now: the model decomposes over model_comm() before it defines the
    // fields, so an automatic count here cannot know the volume (tune.cpp).
    if (config.writers == 0) x.tune_writers_at_start(size);
    else {
      TuneInput in;
      in.mode = config.mode;
      in.ranks = size;
      in.writers = config.writers;
      x.tuning = choose_tuning(in);
    }
    const int writers = x.tuning.writers;
    if (writers >= size)
      throw Error("server mode with " + std::to_string(writers) + " writers needs more than " +
                      std::to_string(size) + " ranks",
                  "config " + config.source + ", key output.writers",
                  "use fewer writers, more ranks, or mode: serverless");
    x.nwriters = writers;
    x.server = rank >= size - writers;
    x.model = !x.server;
    x.writer = x.server;
    estuary::detail::check_mpi(MPI_Comm_split(comm, x.model ? 0 : 1, rank, &x.model_comm), "MPI_Comm_split");
    if (x.server) {
      MPI_Comm_free(&x.model_comm);
      x.model_comm = MPI_COMM_NULL;
    }
    for (int s = size - writers; s < size; ++s) x.server_xranks.push_back(s);
  } else {
    estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.model_comm), "MPI_Comm_dup");
  }
  MPI_Comm_rank(x.xcomm, &x.xrank);
  MPI_Comm_size(x.xcomm, &x.xsize);
  if (x.model) MPI_Comm_rank(x.model_comm, &x.model_rank);
  estuary::detail::check_mpi(MPI_Comm_dup(x.xcomm, &x.ctrl), "MPI_Comm_dup");
  // Serverless writers are chosen at end_def, from the volume, unless configured.
  if (x.server_mode) x.split_writers();
  else if (config.writers > 0) x.assign_writers(config.writers);
  else x.nwriters = 0;  // until end_def
  x.install_handler();
}

Output::~Output() {
  if (!impl_) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    try {
      // Unwinding an exception: a fault, so incomplete records are dropped.
      if (impl_->model) impl_->do_close(std::uncaught_exceptions() > 0);
    } catch (...) {
      // A destructor must not throw; the records already written stay in the closed files.
    }
    for (MPI_Comm* c : {&impl_->model_comm, &impl_->xcomm, &impl_->ctrl, &impl_->wcomm})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
  impl_->restore_handler();
}

void Output::Impl::assign_writers(int d) {
  nwriters = std::min(d, xsize);
  // Writers spread over the ranks (w * P / D), so that on several nodes they share the load.
  for (int w = 0; w < nwriters; ++w)
    if (static_cast<i64>(w) * xsize / nwriters == xrank) writer = true;
  split_writers();
}

void Output::Impl::split_writers() {
  estuary::detail::check_mpi(MPI_Comm_split(xcomm, writer ? 0 : MPI_UNDEFINED, xrank, &wcomm), "MPI_Comm_split");
  if (writer) MPI_Comm_rank(wcomm, &windex);
}

bool Output::is_server() const { return impl_->server; }
int Output::writers() const { return impl_->nwriters; }
const Tuning& Output::tuning() const { return impl_->tuning; }
MPI_Comm Output::model_comm() const { return impl_->model_comm; }
const IoStats& Output::stats() const { return impl_->stats; }

IoReport Output::report(double run_s, double run_without_io_s) const {
  const Impl& x = *impl_;
  IoReport r;
  r.ranks = x.xsize;
  r.writers = x.nwriters;
  r.buffer_records = x.cfg.buffer_records;
  r.writers_auto = x.tuning.writers_auto;
  r.tuning = x.tuning.reason;
  const int is_model = x.model ? 1 : 0;
  MPI_Allreduce(&is_model, &r.model_ranks, 1, MPI_INT, MPI_SUM, x.xcomm);
  const i64 mine[3] = {x.stats.bytes_written, x.stats.records_written, x.writer && x.windex == 0 ? x.stats.files_created : 0};
  i64 sum[3] = {0, 0, 0};
  MPI_Allreduce(mine, sum, 3, MPI_INT64_T, MPI_SUM, x.xcomm);
  r.bytes_written = sum[0];
  r.records_written = sum[1];
  r.files_created = sum[2];
  const double tmine[3] = {x.stats.write_s, x.model ? x.stats.model_io_s : 0.0, x.stats.write_s - x.stats.peer_wait_s};
  double tmax[3] = {0, 0, 0};
  MPI_Allreduce(tmine, tmax, 3, MPI_DOUBLE, MPI_MAX, x.xcomm);
  r.write_s = tmax[0];
  r.model_io_s = tmax[1];
  r.file_write_s = tmax[2];
  r.write_mb_per_s = r.write_s > 0 ? static_cast<double>(r.bytes_written) / 1e6 / r.write_s : 0;
  r.file_write_mb_per_s = r.file_write_s > 0 ? static_cast<double>(r.bytes_written) / 1e6 / r.file_write_s : 0;
  r.run_s = run_s;
  r.run_without_io_s = run_without_io_s;
  r.core_hours = r.ranks * run_s / 3600.0;
  const double without = r.model_ranks * (run_without_io_s > 0 ? run_without_io_s : std::max(0.0, run_s - r.model_io_s)) / 3600.0;
  r.data_output_cost = without > 0 ? (r.core_hours - without) / without : 0;
  r.data_intensity = r.core_hours > 0 ? static_cast<double>(r.bytes_written) / 1e9 / r.core_hours : 0;
  return r;
}

std::string IoReport::json() const {
  char b[768];
  std::snprintf(b, sizeof b,
                "{\"ranks\": %d, \"model_ranks\": %d, \"writers\": %d, \"bytes_written\": %lld, "
                "\"records_written\": %lld, \"files_created\": %lld, \"write_s\": %.6g, "
                "\"write_mb_per_s\": %.6g, \"model_io_s\": %.6g, \"run_s\": %.6g, \"run_without_io_s\": %.6g, "
                "\"core_hours\": %.6g, \"data_output_cost\": %.6g, \"data_intensity_gb_per_ch\": %.6g, ",
                ranks, model_ranks, writers, static_cast<long long>(bytes_written),
                static_cast<long long>(records_written), static_cast<long long>(files_created), write_s,
                write_mb_per_s, model_io_s, run_s, run_without_io_s, core_hours, data_output_cost, data_intensity);
  std::string j = b;
  char f[96];
  std::snprintf(f, sizeof f, "\"file_write_s\": %.6g, \"file_write_mb_per_s\": %.6g, ", file_write_s, file_write_mb_per_s);
  j.append(f);
  j.append("\"buffer_records\": ").append(std::to_string(buffer_records));
  j.append(", \"writers_auto\": ").append(writers_auto ? "true" : "false").append(", \"tuning\": \"");
  for (char c : tuning) {
    if (c == '"' || c == '\\') j.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) j.push_back(c);
  }
  j.append("\"}");
  return j;
}

void Output::def_grid(const std::string& name, const Grid& local) {
  Impl& x = *impl_;
  if (!x.model || x.defined) throw Error("def_grid outside the definition phase", "grid " + name);
  local.check();
  x.grids.push_back(GridInfo::of(name, local));
}

void Output::def_grid(const std::string& name, const std::vector<std::int64_t>& dims) {
  Impl& x = *impl_;
  if (!x.model || x.defined) throw Error("def_grid outside the definition phase", "grid " + name);
  GridInfo g;
  g.name = name;
  g.kind = grid_kind_of_dims(dims.size());
  g.dims = dims;
  if (dims.empty() || dims.size() > 2)
    throw Error("a grid of " + std::to_string(dims.size()) + " dimensions", "grid " + name, "give {nx, ny} or {n}");
  g.global_size = 1;
  for (std::int64_t d : dims) {
    if (d < 1) throw Error("a grid dimension of " + std::to_string(d), "grid " + name, "give sizes of at least 1");
    g.global_size = estuary::detail::checked_mul(g.global_size, d, "the grid's size", "grid " + name);
  }
  g.coordinates = false;
  x.grids.push_back(std::move(g));
}

void Output::def_field(const FieldDef& field) {
  Impl& x = *impl_;
  if (!x.model || x.defined) throw Error("def_field outside the definition phase", "field " + field.name);
  for (const FieldInfo& f : x.fields)
    if (f.def.name == field.name) throw Error("field defined twice", "field " + field.name);
  x.fields.push_back({field, -1, {}, false});
}

void Output::end_def() {
  Impl& x = *impl_;
  const double t0 = MPI_Wtime();
  if (x.model) {
    try {
      x.regrids.define(x.cfg, x.grids, x.fields, x.model_comm, {});
    } catch (const Error& e) {
      // The servers wait for the catalog: they get the error instead, and throw it too.
      if (x.server_mode && x.model_rank == 0) {
        Packer p;
        p.i(-1);
        p.s(e.fault());
        p.s(e.where());
        p.s(e.fix());
        for (int s : x.server_xranks)
          estuary::detail::check_mpi(MPI_Send(p.b.data(), static_cast<int>(p.b.size()), MPI_BYTE, s, kTagCatalog, x.ctrl),
                                     "MPI_Send");
      }
      throw;
    }
    x.compute_axes();
    x.make_zoom_grids();
  }
  if (x.server_mode && x.model_rank == 0 && x.model) {
    const std::vector<char> cat = x.pack_catalog();
    for (int s : x.server_xranks)
      estuary::detail::check_mpi(MPI_Send(cat.data(), static_cast<int>(cat.size()), MPI_BYTE, s, kTagCatalog, x.ctrl),
                        "MPI_Send");
  }
  // Every rank checks the same catalog against the same config: all fail alike, none hangs.
  // The derived fields join the catalog's fields here, on every rank alike.
  x.derived.add(x.cfg, x.fields);
  x.plan_vars();
  x.tune_at_end_def();
  estuary::detail::agree(x.xcomm, [&] {
    if (x.model) {
      x.resolve_masks();
      x.plan_views();
    }
  });
  x.build_transfers();
  estuary::detail::agree(x.xcomm, [&] { x.create_files(); });
  x.defined = true;
  x.write_coordinates();
  x.stats.setup_s += MPI_Wtime() - t0;
}

void Output::serve() {
  Impl& x = *impl_;
  if (!x.server) throw Error("serve() called on a model rank", x.where_rank(), "only is_server() ranks serve");
  MPI_Status st;
  estuary::detail::check_mpi(MPI_Probe(0, kTagCatalog, x.ctrl, &st), "MPI_Probe");
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::vector<char> cat(static_cast<std::size_t>(n));
  estuary::detail::check_mpi(MPI_Recv(cat.data(), n, MPI_BYTE, 0, kTagCatalog, x.ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
  {
    Unpacker u{cat};
    if (u.i() < 0) {  // the model ranks failed before the catalog (end_def): their error
      const std::string fault = u.s(), where = u.s(), fix = u.s();
      throw Error(fault, where, fix);
    }
  }
  x.unpack_catalog(cat);
  x.derived.add(x.cfg, x.fields);
  x.plan_vars();
  x.tune_at_end_def();
  estuary::detail::agree(x.xcomm, [&] {
    if (x.model) {
      x.resolve_masks();
      x.plan_views();
    }
  });
  x.build_transfers();
  estuary::detail::agree(x.xcomm, [&] { x.create_files(); });
  x.defined = true;
  x.serve_loop();
  x.closed = true;
  if (!x.server_error.empty())
    throw Error("the output failed: " + x.server_error, "I/O server " + x.where_rank(),
                "the records completed before the failure are in the files");
}

void Output::write(const std::string& field, double time, std::span<const double> data) {
  Impl& x = *impl_;
  const double t0 = MPI_Wtime();
  x.check_not_failed("write of field " + field);
  if (!x.defined || x.closed) throw Error("write outside the output phase", "field " + field, "call end_def first");
  auto fit = std::find_if(x.fields.begin(), x.fields.end(), [&](const FieldInfo& f) { return f.def.name == field; });
  if (fit == x.fields.end())
    throw Error("write of an undeclared field", "field " + field + ", " + x.where_rank(), "declare it with def_field");
  if (fit->derived)
    throw Error("write of a derived field: the configuration computes it from other fields", "field " + field + ", " +
                x.where_rank(), "write the fields its expression uses");
  const i64 n = fit->def.decomp.size();
  if (static_cast<i64>(data.size()) != n)
    throw Error("write of " + std::to_string(data.size()) + " values, the decomposition holds " + std::to_string(n),
                "field " + field + ", " + x.where_rank());
  const int f = static_cast<int>(fit - x.fields.begin());
  bool terminate = x.write_field(f, time, data);
  if (!terminate && !x.regrids.empty()) {
    // The sample on the grids of files on another grid, then their temporal operations there.
    // (Only for the files that take this sample: an instant field written every 6 h from a
    // model writing every 30 min is remapped every 12th write.)
    terminate = x.regrids.written(
        f, data, [&](int r) { return x.needs_sample(r, time); },
        [&](int r, std::span<const double> values) { return x.write_field(r, time, values); });
    x.stats.regrid_s = x.regrids.seconds();
  }
  if (!terminate && !x.derived.empty()) {
    // The derived fields this write completes for `time`, evaluated here on the model ranks.
    const double d0 = MPI_Wtime();
    terminate = x.derived.written(f, time, data, [&](int d, double when, std::span<const double> values) {
      return x.write_field(d, when, values);
    });
    x.stats.derived_s += MPI_Wtime() - d0;
  }
  if (x.server_mode) {
    // Lets MPI progress the transfers in flight while the model computes.
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, x.ctrl, &flag, MPI_STATUS_IGNORE);
  }
  x.stats.model_io_s += MPI_Wtime() - t0;
  if (terminate) {
    x.do_close(true);
    throw Terminated("SIGTERM received: every record handed over is written and the files are closed",
                     x.where_rank(), "end the run");
  }
}

bool Output::Impl::ends_period(Var& v, double time) {
  const Frequency& F = files[static_cast<std::size_t>(v.file)].cfg.output_freq;
  if (!F) return true;  // no period (the coupler's files): every write is a record
  // The period a sample belongs to is (boundary next_k - 1, boundary next_k = next_out].
  if (std::isnan(v.next_out)) {
    v.next_k = clock.first_boundary_from(F, time);
    v.next_out = clock.boundary(F, v.next_k);
  }
  const double eps = 1e-9 * (v.next_out - clock.boundary(F, v.next_k - 1));
  return time >= v.next_out - eps;
}

bool Output::Impl::sampled(const Var& v, double time) {
  // sampling_freq: only samples at its multiples enter the operation (XIOS freq_op).
  if (v.sampling_s <= 0) return true;
  const double q = time / v.sampling_s;
  return std::abs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::abs(q));
}

bool Output::Impl::needs_sample(int f, double time) {
  auto it = vars_of_field.find(fields[static_cast<std::size_t>(f)].def.name);
  if (it == vars_of_field.end()) return false;
  for (int vi : it->second) {
    Var& v = vars[static_cast<std::size_t>(vi)];
    if (v.op == Operation::once ? !v.done_once
                                : ends_period(v, time) || (v.op != Operation::instant && sampled(v, time)))
      return true;
  }
  return false;
}

bool Output::Impl::write_field(int f, double time, std::span<const double> data) {
  Impl& x = *this;
  const FieldInfo& info = x.fields[static_cast<std::size_t>(f)];
  const std::string& field = info.def.name;
  const i64 n = info.def.decomp.size();
  auto it = x.vars_of_field.find(field);
  if (it == x.vars_of_field.end()) return false;  // declared but in no file
  std::vector<int> due;
  for (int vi : it->second) {
    Var& v = x.vars[static_cast<std::size_t>(vi)];
    if (v.op == Operation::once) {
      if (!v.done_once) due.push_back(vi);
      continue;
    }
    if (!x.files[static_cast<std::size_t>(v.file)].cfg.output_freq) {  // no period: every write is a record
      due.push_back(vi);                                                // (instant, plan_vars checked)
      continue;
    }
    const bool ends = x.ends_period(v, time);
    const std::size_t un = static_cast<std::size_t>(n);
    const bool sample = sampled(v, time);
    if (sample && v.op != Operation::instant) {  // (once is handled above)
      v.acc.resize(un);
      estuary::detail::TimeAccumulator(time_op(v.op)).add(v.acc, data, v.nsamples);
    }
    if (sample) v.nsamples += 1;
    if (ends) due.push_back(vi);
  }
  bool terminate = false;
  if (!due.empty() && (x.cfg.catch_sigterm || x.server_mode)) {
    // SIGTERM reaches ranks at different moments, and a server's error reaches model rank 0
    // first: agree at this output step, which every model rank reaches with the same records,
    // so that all of them stop at the same point.
    x.poll_server_error(false);
    int mine[2] = {g_sigterm ? 1 : 0, x.server_error.empty() ? 0 : 1}, any[2] = {0, 0};
    estuary::detail::check_mpi(MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, x.model_comm), "MPI_Allreduce");
    terminate = any[0] != 0 && x.cfg.catch_sigterm;
    if (any[1]) {
      x.failure = x.share_from_root(x.server_error);
      throw Error("the output failed: " + x.failure, "write of field " + field + " on " + x.where_rank(),
                  "end the run; the records completed before the failure are in the files");
    }
  }
  // Masked points go out as the fill value, whatever the model gave there (a copy: the model's
  // array is not touched).
  const std::vector<std::size_t>& masked = info.masked;
  auto with_mask = [&](const double* values) {
    if (masked.empty()) return values;
    x.masked_copy.assign(values, values + n);
    for (std::size_t i : masked) x.masked_copy[i] = kFillValue;
    return static_cast<const double*>(x.masked_copy.data());
  };
  for (int vi : due) {
    Var& v = x.vars[static_cast<std::size_t>(vi)];
    if (v.op == Operation::once) {
      x.emit(v, with_mask(data.data()), time, time, time);
      v.done_once = true;
      continue;
    }
    const Frequency& F = x.files[static_cast<std::size_t>(v.file)].cfg.output_freq;
    if (!F) {
      x.emit(v, with_mask(data.data()), time, time, time);
      continue;
    }
    const double tb0 = x.clock.boundary(F, v.next_k - 1), tb1 = v.next_out;
    if (v.op == Operation::instant) {
      x.emit(v, with_mask(data.data()), time, time, time);
    } else {
      // A period without a sample (sampling coarser than the model's writes): the fill value.
      if (v.nsamples == 0) v.acc.assign(data.size(), kFillValue);
      else estuary::detail::TimeAccumulator(time_op(v.op)).result(v.acc, v.nsamples, v.acc);
      for (std::size_t i : masked) v.acc[i] = kFillValue;
      x.emit(v, v.acc.data(), 0.5 * (tb0 + tb1), tb0, tb1);
    }
    v.nsamples = 0;
    while (v.next_out <= time + 1e-9 * (tb1 - tb0)) v.next_out = x.clock.boundary(F, ++v.next_k);
  }
  return terminate;
}

void Output::flush() {
  Impl& x = *impl_;
  if (!x.defined || x.closed) return;
  const double t0 = MPI_Wtime();
  x.check_not_failed("flush");
  if (x.server_mode) {
    x.drain_slots();
    const std::string error = x.command_servers(kFlush);
    if (!error.empty()) {
      x.failure = error;
      x.check_not_failed("flush");
    }
  } else {
    x.or_fail([&] { x.sync_files(); });
  }
  x.stats.model_io_s += MPI_Wtime() - t0;
}

void Output::close() {
  Impl& x = *impl_;
  const double t0 = MPI_Wtime();
  if (x.model) x.do_close(false);
  x.stats.model_io_s += MPI_Wtime() - t0;
}

}  // namespace estuary::io
