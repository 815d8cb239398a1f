// Output's files on the writers: created from the catalog, records written (slabs, named
// variables, time bounds), committed, coordinates, synced and closed.
#include "io/output_impl.hpp"

namespace estuary::io {

void Output::Impl::create_files() {
  if (!writer) return;
  // Every writer learns of a directory writer 0 cannot create, and of a file one of them
  // cannot create, before the next collective (else the others would wait in it forever).
  estuary::detail::agree(wcomm, [&] {
    if (windex != 0) return;
    const std::string dir = cfg.directory.empty() ? "." : cfg.directory;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      throw Error("cannot create the output directory: " + ec.message(), "directory " + dir + ", config " + cfg.source,
                  "set output.directory to a writable place");
  });
  for (FileState& fs : files) {
    for (Var& v : vars) {
      if (v.file != static_cast<int>(&fs - files.data())) continue;
      const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
      v.boxes = detail::range_boxes(v.shape, tr.lo, tr.hi);
    }
    fs.time_vars = static_cast<int>(std::count_if(vars.begin(), vars.end(), [&](const Var& v) {
      return v.file == static_cast<int>(&fs - files.data()) && v.has_time;
    }));
    // A split file is opened when its first record arrives (its name holds the period).
    if (!fs.cfg.split_freq) estuary::detail::agree(wcomm, [&] { open_file(fs, fs.path); });
  }
}

void Output::Impl::open_file(FileState& fs, const std::string& path) {
  {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    if (fs.cfg.format == Format::netcdf4) fs.w = detail::create_netcdf4(path, wcomm);
    else fs.w = nwriters > 1 ? detail::create_pnetcdf(path, wcomm) : detail::create_netcdf(path);
    fs.w = detail::with_fault_injection(std::move(fs.w), windex);
    stats.files_created += 1;
    fs.time_written = -1;
    fs.committed = 0;
    FileWriter& w = *fs.w;
    const int fi = static_cast<int>(&fs - files.data());
    w.put_att(-1, "Conventions", "CF-1.8");
    // CF 2.6.2: a title, the configuration's or one naming the file.
    w.put_att(-1, "title", cfg.title.empty() ? "estuary output " + fs.cfg.name : cfg.title);
    for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"institution", &cfg.institution},
                                     {"source", &cfg.source_attribute}, {"comment", &cfg.comment}})
      if (!text->empty()) w.put_att(-1, name, *text);
    w.put_att(-1, "history", history_line() + (cfg.history.empty() ? "" : "\n" + cfg.history));
    std::map<std::string, int> dims;
    int tdim = -1, nvdim = -1;
    if (fs.has_time) tdim = w.def_dim("time", -1);
    const bool axis_bounds = std::any_of(fs.axes1d.begin(), fs.axes1d.end(), [&](const auto& a) {
      return !grids[static_cast<std::size_t>(a.first)].axis_lon_bnds.empty();
    });
    if (fs.has_bounds || axis_bounds) nvdim = w.def_dim("bnds", 2);
    // Dimensions and level axes in first-use order.
    std::vector<std::pair<std::string, std::vector<double>>> axes;
    std::vector<std::string> axis_units;
    for (const Var& v : vars) {
      if (v.file != fi) continue;
      for (std::size_t k = 0; k < v.dim_names.size(); ++k) {
        if (!dims.count(v.dim_names[k])) {
          dims[v.dim_names[k]] = w.def_dim(v.dim_names[k], v.shape[k]);
          if (v.field >= 0 && v.dim_names[k].rfind("lev", 0) == 0) {
            axes.push_back({v.dim_names[k], v.level_values});
            axis_units.push_back(fields[static_cast<std::size_t>(v.field)].def.level_units);
          }
        }
      }
    }
    const std::string tunits = "seconds since " + cfg.reference_time;
    if (fs.has_time) {
      fs.time_var = w.def_var("time", true, {tdim});
      w.put_att(fs.time_var, "standard_name", "time");
      w.put_att(fs.time_var, "long_name", "time");
      w.put_att(fs.time_var, "units", tunits);
      w.put_att(fs.time_var, "calendar", cfg.calendar);
      w.put_att(fs.time_var, "axis", "T");
      if (!cfg.time_comment.empty()) w.put_att(fs.time_var, "comment", cfg.time_comment);
      if (fs.has_bounds) {
        w.put_att(fs.time_var, "bounds", "time_bnds");
        // CF 7.1: a boundary variable takes units and calendar from its parent; checkers warn
        // on its own.
        fs.tb_var = w.def_var("time_bnds", true, {tdim, nvdim});
      }
    }
    std::vector<int> axis_vars;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const int av = w.def_var(axes[a].first, true, {dims[axes[a].first]});
      // CF's vertical coordinate: depth in metres (ocean), pressure (atmosphere), else levels.
      const std::string& u = axis_units[a];
      const bool pressure = u == "Pa" || u == "hPa";
      w.put_att(av, "standard_name", detail::level_standard_name(u));
      w.put_att(av, "long_name", u == "m" ? "depth" : pressure ? "pressure" : "vertical level");
      w.put_att(av, "units", u);
      w.put_att(av, "axis", "Z");
      w.put_att(av, "positive", u == "m" || pressure ? "down" : "up");
      axis_vars.push_back(av);
    }
    // 1-D longitude and latitude of rectilinear grids: (variable, values) to write after enddef.
    std::vector<std::tuple<int, const std::vector<double>*, bool>> axis1d_values;
    for (const auto& [g, sfx] : fs.axes1d) {
      const GridInfo& grid = grids[static_cast<std::size_t>(g)];
      for (int lon = 1; lon >= 0; --lon) {
        const std::string name = (lon ? "lon" : "lat") + sfx;
        const int av = w.def_var(name, true, {dims[name]});
        w.put_att(av, "standard_name", lon ? "longitude" : "latitude");
        w.put_att(av, "long_name", lon ? "longitude" : "latitude");
        w.put_att(av, "units", lon ? "degrees_east" : "degrees_north");
        w.put_att(av, "axis", lon ? "X" : "Y");
        axis1d_values.push_back({av, lon ? &grid.axis_lon : &grid.axis_lat, false});
        if (!grid.axis_lon_bnds.empty()) {
          const std::string b = (lon ? "lon_bnds" : "lat_bnds") + sfx;
          w.put_att(av, "bounds", b);
          const int bv = w.def_var(b, true, {dims[name], nvdim});  // units: its parent's (CF 7.1)
          axis1d_values.push_back({bv, lon ? &grid.axis_lon_bnds : &grid.axis_lat_bnds, true});
        }
      }
    }
    for (Var& v : vars) {
      if (v.file != fi) continue;
      std::vector<int> d;
      if (v.has_time) d.push_back(tdim);
      for (const auto& n : v.dim_names) d.push_back(dims[n]);
      v.ncvar = w.def_var(v.name, v.dbl, d);
      if (v.field >= 0 && (v.deflate > 0 || v.zstd > 0)) {
        // Chunks of one record and one level: a horizontal slice each.
        std::vector<i64> chunk;
        if (v.has_time) chunk.push_back(1);
        for (std::size_t k = 0; k < v.shape.size(); ++k)
          chunk.push_back(v.dim_names[k].rfind("lev", 0) == 0 ? 1 : v.shape[k]);
        w.def_deflate(v.ncvar, v.deflate, chunk);
        if (v.zstd > 0) w.def_zstd(v.ncvar, v.zstd, chunk, v.name);
      }
      // Lossy quantization, applied by netCDF before the filters (so they see zeroed bits).
      if (v.field >= 0 && v.quantize != FieldConfig::Quantize::none)
        w.def_quantize(v.ncvar, static_cast<int>(v.quantize), v.significant);
      if (v.coord >= 0) {
        const GridInfo& g = grids[static_cast<std::size_t>(v.grid)];
        const bool is_lon = v.coord % 2 == 0;
        if (v.coord < 2) {
          w.put_att(v.ncvar, "standard_name", is_lon ? "longitude" : "latitude");
          w.put_att(v.ncvar, "long_name", is_lon ? "longitude" : "latitude");
          w.put_att(v.ncvar, "units", is_lon ? "degrees_east" : "degrees_north");
          if (g.ncorner > 0)
            w.put_att(v.ncvar, "bounds", v.name.substr(0, 3) + "_bnds" + v.name.substr(3));
        }  // the bounds (v.coord >= 2): units from their parent (CF 7.1)
        continue;
      }
      if (!v.standard_name.empty()) w.put_att(v.ncvar, "standard_name", v.standard_name);
      // CF 3.3: a variable should have a standard_name or a long_name; without either, its name.
      if (!v.long_name.empty()) w.put_att(v.ncvar, "long_name", v.long_name);
      else if (v.standard_name.empty()) w.put_att(v.ncvar, "long_name", v.name);
      if (!v.units.empty()) w.put_att(v.ncvar, "units", v.units);
      // Masked points and periods without a sample: CF's fill value, in the variable's type.
      if (v.fill) {
        w.put_att(v.ncvar, "_FillValue", {kFillValue}, !v.dbl);
        w.put_att(v.ncvar, "missing_value", {kFillValue}, !v.dbl);
      }
      // The horizontal coordinate variables of this field's grid, named after its dimensions
      // (1-D coordinate variables of a rectilinear grid need no attribute: they share its dims).
      std::string sfx = v.dim_names.back();
      sfx = sfx.substr(sfx.find('_') == std::string::npos ? sfx.size() : sfx.find('_'));
      if (!grids[static_cast<std::size_t>(v.grid)].rectilinear && grids[static_cast<std::size_t>(v.grid)].coordinates)
        w.put_att(v.ncvar, "coordinates", "lon" + sfx + " lat" + sfx);
      w.put_att(v.ncvar, "online_operation", name_of(v.op));
      static const std::map<Operation, std::string> cm = {{Operation::average, "time: mean"},
                                                          {Operation::minimum, "time: minimum"},
                                                          {Operation::maximum, "time: maximum"},
                                                          {Operation::accumulate, "time: sum"},
                                                          {Operation::instant, "time: point"}};
      if (cm.count(v.op)) w.put_att(v.ncvar, "cell_methods", cm.at(v.op));
    }
    w.enddef();
    // Level values: the first writer writes them whole, the others join the collective call.
    for (std::size_t a = 0; a < axes.size(); ++a) {
      std::vector<Box> boxes;
      if (windex == 0) boxes.push_back({{0}, {static_cast<i64>(axes[a].second.size())}});
      w.put(axis_vars[a], -1, boxes, axes[a].second.data());
    }
    // 1-D axes and their bounds likewise (a bounds variable is (n, 2)).
    for (const auto& [av, values, bounds] : axis1d_values) {
      std::vector<Box> boxes;
      const i64 n = static_cast<i64>(values->size());
      if (windex == 0) boxes.push_back(bounds ? Box{{0, 0}, {n / 2, 2}} : Box{{0}, {n}});
      w.put(av, -1, boxes, values->data());
    }
  }
  // Split files: every one holds the coordinates and the `once` fields.
  for (Var& v : vars)
    if (v.file == static_cast<int>(&fs - files.data()) && !v.has_time && v.kept)
      put_slab(fs, v, -1, v.keep.data());
}

void Output::Impl::put_slab(FileState& fs, Var& v, i64 record, const double* data) {
  const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  fs.w->put(v.ncvar, record, v.boxes, data);
  stats.bytes_written += (tr.hi - tr.lo) * (v.dbl ? 8 : 4);
}

void Output::Impl::write_record(Var& v, i64 record, double time, double tb0, double tb1) {
  const double t0 = MPI_Wtime();
  FileState& fs = files[static_cast<std::size_t>(v.file)];
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  if (!v.has_time) {
    if (fs.cfg.split_freq) {
      // Coordinates and `once` fields go into every split file: kept for the next ones.
      v.keep = slab_of(v);
      v.kept = true;
      if (fs.w) put_named(fs, v, -1, v.keep.data());
    } else {
      put_named(fs, v, -1, slab_of(v).data());
      stats.records_written += 1;
    }
    stats.write_s += MPI_Wtime() - t0;
    return;
  }
  FileState::Pending& p = fs.pending[record];
  p.time = time;
  p.tb0 = tb0;
  p.tb1 = tb1;
  p.slabs[static_cast<int>(&v - vars.data())] = slab_of(v);
  // A record is written once complete, or once a later one arrived: then the missing
  // variables were not written at that step by the model (they keep the fill value).
  while (!fs.pending.empty() &&
         (static_cast<int>(fs.pending.begin()->second.slabs.size()) == fs.time_vars || fs.pending.size() > 1))
    commit_record(fs);
  stats.write_s += MPI_Wtime() - t0;
}

void Output::Impl::commit_record(FileState& fs) {
  auto node = fs.pending.extract(fs.pending.begin());
  i64 record = node.key();
  FileState::Pending& p = node.mapped();
  if (fs.cfg.split_freq) {
    // A record belongs to the split period (boundary k, boundary k+1] that holds its end (as
    // output periods do); a new period closes the previous file, which is then complete on its own.
    const Frequency& S = fs.cfg.split_freq;
    const i64 k = clock.first_boundary_from(S, p.tb1) - 1;
    if (!fs.w || k != fs.split) {
      if (fs.w) {
        fs.w->close();
        fs.w.reset();
      }
      fs.split = k;
      fs.rec_base = record;
      // Month periods start on whole days: the label is the date.
      const std::string label = date_label(clock.boundary(S, k), cfg.reference_time, cfg.calendar,
                                           S.months > 0 ? 86400.0 : S.seconds);
      on_writers([&] {
        open_file(fs, (std::filesystem::path(cfg.directory) / (fs.cfg.name + "_" + label + ".nc")).string());
      });
    }
    record -= fs.rec_base;
  }
  FileWriter& w = *fs.w;
  double t0 = MPI_Wtime();
  // Every writer has the record's data from here on: the time until then is the others' data
  // still arriving, told apart from the file system's (IoStats::peer_wait_s).
  if (nwriters > 1) estuary::detail::check_mpi(MPI_Barrier(wcomm), "MPI_Barrier");
  stats.peer_wait_s += MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  on_writers([&] { w.prepare_record(record); });
  stats.commit_s += MPI_Wtime() - t0;
  // The variables first, the time last: a netCDF-4 file, whose record dimension cannot shrink,
  // shows a record a failed write left incomplete with a missing (fill-value) time.
  {
    // The record's variables in one collective call (FileWriter::put_record).
    std::vector<FileWriter::Put> puts;
    for (auto& [vi, slab] : p.slabs) {
      const Var& v = vars[static_cast<std::size_t>(vi)];
      const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
      puts.push_back({v.ncvar, &v.boxes, slab.data(), "variable " + v.name + ", record " + std::to_string(record)});
      stats.bytes_written += (tr.hi - tr.lo) * (v.dbl ? 8 : 4);
      stats.records_written += 1;
    }
    on_writers([&] { w.put_record(record, puts); });
  }
  on_writers([&] {
   try {
    if (record > fs.time_written) {
      std::vector<Box> b;
      if (windex == 0) b.push_back({{}, {}});
      w.put(fs.time_var, record, b, &p.time);
      if (fs.tb_var >= 0) {
        const double tb[2] = {p.tb0, p.tb1};
        std::vector<Box> bb;
        if (windex == 0) bb.push_back({{0}, {2}});
        w.put(fs.tb_var, record, bb, tb);
      }
      fs.time_written = record;
    }
   } catch (const Error& e) {
    throw Error(e.fault(), e.where() + ", variable time, record " + std::to_string(record), e.fix());
   }
  });
  t0 = MPI_Wtime();
  on_writers([&] {
    try {
      w.commit_records(record + 1);
    } catch (const Error& e) {
      throw Error(e.fault(), e.where() + ", record " + std::to_string(record), e.fix());
    }
  });
  fs.committed = record + 1;
  stats.commit_s += MPI_Wtime() - t0;
}

void Output::Impl::put_named(FileState& fs, Var& v, i64 record, const double* data) {
  on_writers([&] {
    try {
      put_slab(fs, v, record, data);
    } catch (const Error& e) {
      throw Error(e.fault(),
                  e.where() + ", variable " + v.name + (record >= 0 ? ", record " + std::to_string(record) : ""),
                  e.fix());
    }
  });
}

void Output::Impl::close_files(bool fault) {
  if (!writer) return;
  const double t0 = MPI_Wtime();
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  std::string first_error;
  for (FileState& fs : files) {
    try {
      if (!fault)
        while (!fs.pending.empty()) commit_record(fs);
    } catch (const std::exception& e) {
      // The writers fail alike here (the writes are collective): close what is open.
      if (first_error.empty()) first_error = e.what();
      fault = true;
    }
    fs.pending.clear();
    if (!fs.w) continue;
    const std::string path = fs.w->path();
    const bool classic = fs.w->classic();
    try {
      on_writers([&] { fs.w->close(); });
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
      fault = true;
    }
    fs.w.reset();
    if (fault && classic && windex == 0) {
      try {
        detail::truncate_records(path, fs.committed);
      } catch (const std::exception& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
    // A restart file replaces the previous one only when nothing failed (SIGTERM is no failure).
    const bool failed = !first_error.empty() || !failure.empty() || !server_error.empty();
    if (fs.path != fs.final_path && windex == 0 && !failed) std::filesystem::rename(fs.path, fs.final_path);
  }
  stats.write_s += MPI_Wtime() - t0;
  if (!first_error.empty()) throw Error(first_error, "closing the output files");
}

void Output::Impl::sync_files() {
  if (!writer) return;
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  for (FileState& fs : files)
    if (fs.w) on_writers([&] { fs.w->sync(); });
}

void Output::Impl::write_coordinates() {
  for (Var& v : vars) {
    if (v.coord < 0) continue;
    const GridInfo& g = grids[static_cast<std::size_t>(v.grid)];
    const std::vector<double>* src[] = {&g.lon, &g.lat, &g.clon, &g.clat};
    emit(v, model ? src[v.coord]->data() : nullptr, 0, 0, 0);
    v.done_once = true;
  }
}

}  // namespace estuary::io
