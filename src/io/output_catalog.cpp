// Output set-up: the catalog (grids and fields) the model ranks send the writers, the axes,
// masks and variables it gives, and the transfers (one Redist per source decomposition).
#include "io/output_impl.hpp"

namespace estuary::io {

std::vector<char> Output::Impl::pack_catalog() const {
  Packer p;
  p.i(static_cast<i64>(grids.size()));
  for (const GridInfo& g : grids) {
    p.s(g.name);
    p.i(static_cast<i64>(g.kind));
    p.vi(g.dims);
    p.i(g.global_size);
    p.i(g.ncorner);
    p.i(g.rectilinear ? 1 : 0);
    p.i(g.coordinates ? 1 : 0);
    p.vd(g.axis_lon);
    p.vd(g.axis_lat);
    p.vd(g.axis_lon_bnds);
    p.vd(g.axis_lat_bnds);
    p.i(g.parent);
    p.i(static_cast<i64>(g.zoom.kind));
    for (double x : {g.zoom.west, g.zoom.east, g.zoom.south, g.zoom.north}) p.d(x);
    for (i64 x : {g.zoom.i0, g.zoom.i1, g.zoom.j0, g.zoom.j1}) p.i(x);
    p.s(g.zoom_error);
    p.vi(g.ipos);
    p.vi(g.jpos);
  }
  p.i(static_cast<i64>(fields.size()));
  for (const FieldInfo& f : fields) {
    p.s(f.def.name);
    p.s(f.def.grid);
    p.vd(f.def.levels);
    p.s(f.def.level_units);
    p.s(f.def.units);
    p.s(f.def.long_name);
    p.s(f.def.standard_name);
    p.i(f.def.decomp.global_size());
  }
  return std::move(p.b);
}

void Output::Impl::unpack_catalog(const std::vector<char>& b) {
  Unpacker u{b};
  grids.resize(static_cast<std::size_t>(u.i()));
  for (GridInfo& g : grids) {
    g.name = u.s();
    g.kind = static_cast<GridKind>(u.i());
    g.dims = u.vi();
    g.global_size = u.i();
    g.ncorner = static_cast<int>(u.i());
    g.rectilinear = u.i() != 0;
    g.coordinates = u.i() != 0;
    g.axis_lon = u.vd();
    g.axis_lat = u.vd();
    g.axis_lon_bnds = u.vd();
    g.axis_lat_bnds = u.vd();
    g.parent = static_cast<int>(u.i());
    g.zoom.kind = static_cast<FieldConfig::Zoom::Kind>(u.i());
    for (double* x : {&g.zoom.west, &g.zoom.east, &g.zoom.south, &g.zoom.north}) *x = u.d();
    for (i64* x : {&g.zoom.i0, &g.zoom.i1, &g.zoom.j0, &g.zoom.j1}) *x = u.i();
    g.zoom_error = u.s();
    g.ipos = u.vi();
    g.jpos = u.vi();
  }
  fields.resize(static_cast<std::size_t>(u.i()));
  for (FieldInfo& f : fields) {
    f.def.name = u.s();
    f.def.grid = u.s();
    f.def.levels = u.vd();
    f.def.level_units = u.s();
    f.def.units = u.s();
    f.def.long_name = u.s();
    f.def.standard_name = u.s();
    f.def.decomp = Decomp::empty(u.i());
  }
}

void Output::Impl::compute_axes() {
  for (GridInfo& g : grids) {
    if ((g.kind != GridKind::lonlat && g.kind != GridKind::gaussian) || g.dims.size() != 2) continue;
    const i64 nx = g.dims[0], ny = g.dims[1];
    const std::size_t nb = static_cast<std::size_t>(3 * (nx + ny));  // values, low and high bounds
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> hi(2 * nb, -inf);  // [max of v, max of -v]: one reduction gives both
    auto put = [&](std::size_t slot, double value) {
      hi[slot] = std::max(hi[slot], value);
      hi[nb + slot] = std::max(hi[nb + slot], -value);
    };
    const std::size_t ux = static_cast<std::size_t>(nx), uy = static_cast<std::size_t>(ny);
    for (std::size_t k = 0; k < g.points.size(); ++k) {
      const std::size_t i = static_cast<std::size_t>(g.points[k] % nx), j = static_cast<std::size_t>(g.points[k] / nx);
      put(i, g.lon[k]);
      put(ux + j, g.lat[k]);
      if (g.ncorner > 0) {
        double dlo = inf, dhi = -inf, blo = inf, bhi = -inf;
        for (int c = 0; c < g.ncorner; ++c) {
          const std::size_t q = k * static_cast<std::size_t>(g.ncorner) + static_cast<std::size_t>(c);
          const double d = std::remainder(g.clon[q] - g.lon[k], 360.0);
          dlo = std::min(dlo, d);
          dhi = std::max(dhi, d);
          blo = std::min(blo, g.clat[q]);
          bhi = std::max(bhi, g.clat[q]);
        }
        put(ux + uy + 2 * i, g.lon[k] + dlo);
        put(ux + uy + 2 * i + 1, g.lon[k] + dhi);
        put(3 * ux + uy + 2 * j, blo);
        put(3 * ux + uy + 2 * j + 1, bhi);
      }
    }
    estuary::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(hi.size()), MPI_DOUBLE,
                                             MPI_MAX, model_comm),
                               "MPI_Allreduce");
    const std::size_t used = g.ncorner > 0 ? nb : ux + uy;
    bool ok = true;
    for (std::size_t t = 0; t < used && ok; ++t)
      ok = std::isfinite(hi[t]) && std::abs(hi[t] + hi[nb + t]) <= 1e-9 * std::max(1.0, std::abs(hi[t]));
    g.rectilinear = ok;
    if (!ok) continue;
    g.axis_lon.assign(hi.begin(), hi.begin() + nx);
    g.axis_lat.assign(hi.begin() + nx, hi.begin() + nx + ny);
    if (g.ncorner > 0) {
      g.axis_lon_bnds.assign(hi.begin() + nx + ny, hi.begin() + 3 * nx + ny);
      g.axis_lat_bnds.assign(hi.begin() + 3 * nx + ny, hi.begin() + 3 * (nx + ny));
    }
  }
}

void Output::Impl::resolve_masks() {
  for (FieldInfo& f : fields) {
    if (f.derived) continue;  // masked where any input is (below)
    const std::size_t n = static_cast<std::size_t>(f.def.decomp.size());
    f.masked.clear();
    if (!f.def.mask.empty()) {
      if (f.def.mask.size() != n)
        throw Error("mask of " + std::to_string(f.def.mask.size()) + " values, the decomposition holds " +
                        std::to_string(n),
                    "field " + f.def.name + ", " + where_rank(), "give one mask value per local value");
      for (std::size_t i = 0; i < n; ++i)
        if (f.def.mask[i] == 0) f.masked.push_back(i);
      continue;
    }
    const GridInfo& g = grids[static_cast<std::size_t>(f.grid)];
    if (std::all_of(g.mask.begin(), g.mask.end(), [](std::int32_t m) { return m != 0; })) continue;
    std::unordered_map<i64, std::int32_t> at;
    for (std::size_t k = 0; k < g.points.size(); ++k) at.emplace(g.points[k], g.mask[k]);
    const std::vector<i64> idx = f.def.decomp.to_indices();
    for (std::size_t i = 0; i < n; ++i) {
      const i64 h = idx[i] % g.global_size;  // the grid point under this value (any level)
      auto it = at.find(h);
      if (it == at.end())
        throw Error("value " + std::to_string(i) + " lies on point " + std::to_string(h) + " of grid " + g.name +
                        ", which this rank's def_grid part does not hold, so its mask is unknown",
                    "field " + f.def.name + ", " + where_rank(),
                    "give the field its own mask (FieldDef::mask), or def_grid the points the field holds");
      if (it->second == 0) f.masked.push_back(i);
    }
  }
  derived.prepare(fields, where_rank(), clock);
}

void Output::Impl::plan_vars() {
  for (FieldInfo& f : fields) {
    auto it = std::find_if(grids.begin(), grids.end(), [&](const GridInfo& g) { return g.name == f.def.grid; });
    if (it == grids.end())
      throw Error("field " + f.def.name + " names grid '" + f.def.grid + "', which was not defined",
                  "field " + f.def.name, "call def_grid before def_field");
    f.grid = static_cast<int>(it - grids.begin());
    const i64 nlev = f.def.levels.empty() ? 1 : static_cast<i64>(f.def.levels.size());
    if (f.def.decomp.global_size() != nlev * it->global_size)
      throw Error("decomposition covers " + std::to_string(f.def.decomp.global_size()) +
                      " points, the grid times levels " + std::to_string(nlev * it->global_size),
                  "field " + f.def.name, "number the field as level * grid size + grid point");
  }
  // Transfers: one per field, then one per (grid, coordinate kind) used.
  std::map<std::pair<int, int>, int> coord_transfer;
  transfers.resize(fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) transfers[i].n = fields[i].def.decomp.global_size();
  for (std::size_t fi = 0; fi < cfg.files.size(); ++fi) {
    const FileConfig& fc = cfg.files[fi];
    FileState fs;
    fs.cfg = fc;
    fs.final_path = (std::filesystem::path(cfg.directory) / (fc.name + ".nc")).string();
    fs.path = fc.restart ? fs.final_path + ".tmp" : fs.final_path;
    std::vector<int> used_grids;
    std::vector<int> hgrid;  // per field config: its horizontal grid (a zoomed one for a zoom)
    std::vector<std::vector<double>> axes;
    for (std::size_t k = 0; k < fc.fields.size(); ++k) {
      const FieldConfig& fd = fc.fields[k];
      auto it = std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& f) { return f.def.name == fd.name; });
      const std::string where =
          !fd.origin.empty() ? fd.origin
                             : "config " + cfg.source + ", file " + fc.name + ", key fields[" + std::to_string(k) + "]";
      if (it == fields.end())
        throw Error("field '" + fd.name + "' is not declared by the model", fd.origin.empty() ? where + ".name" : where,
                    "declare it with def_field or remove it from the file");
      hgrid.push_back(fd.zoom.kind == FieldConfig::Zoom::Kind::none
                          ? it->grid
                          : zoom_grid_of(it->grid, fd, fd.zoom_origin.empty() ? where : fd.zoom_origin));
      if (std::find(used_grids.begin(), used_grids.end(), hgrid.back()) == used_grids.end())
        used_grids.push_back(hgrid.back());
      if (!fc.output_freq && fd.operation != Operation::once && fd.operation != Operation::instant)
        throw Error("a " + std::string(name_of(fd.operation)) + " field in a file without output_freq, whose every write is a record",
                    !fd.origin.empty() ? fd.origin
                                       : "config " + cfg.source + ", file " + fc.name + ", key fields[" + std::to_string(k) + "].operation",
                    "give the file an output_freq, or write the field instant");
      if (fd.operation != Operation::once) fs.has_time = true;
      if (fd.operation != Operation::once && fd.operation != Operation::instant) fs.has_bounds = true;
    }
    // Horizontal coordinates of each grid the file uses; the first grid gets the plain names.
    std::map<int, std::vector<std::string>> hdims;
    for (std::size_t gi = 0; gi < used_grids.size(); ++gi) {
      const int g = used_grids[gi];
      const GridInfo& grid = grids[static_cast<std::size_t>(g)];
      const std::string sfx = gi == 0 ? "" : "_" + grid.name;
      const std::vector<i64> hs = grid.hshape();
      hdims[g] = hs.size() == 2 ? std::vector<std::string>{"y" + sfx, "x" + sfx}
                                : std::vector<std::string>{"cell" + sfx};
      if (grid.rectilinear) {  // 1-D coordinate variables, written whole at file creation
        hdims[g] = {"lat" + sfx, "lon" + sfx};
        fs.axes1d.push_back({g, sfx});
        continue;
      }
      if (!grid.coordinates) continue;  // its dimensions only
      for (int c = 0; c < (grid.ncorner > 0 ? 4 : 2); ++c) {
        auto key = std::make_pair(g, c);
        if (!coord_transfer.count(key)) {
          coord_transfer[key] = static_cast<int>(transfers.size());
          Transfer t;
          t.n = grid.global_size * (c >= 2 ? grid.ncorner : 1);
          transfers.push_back(std::move(t));
        }
        Var v;
        v.file = static_cast<int>(fi);
        v.name = coord_name(c) + sfx;
        v.grid = g;
        v.coord = c;
        v.transfer = coord_transfer[key];
        v.shape = hs;
        v.dim_names = hdims[g];
        if (c >= 2) {
          v.shape.push_back(grid.ncorner);
          v.dim_names.push_back("nv" + sfx);
        }
        vars.push_back(std::move(v));
      }
    }
    for (std::size_t k = 0; k < fc.fields.size(); ++k) {
      const FieldConfig& fd = fc.fields[k];
      const int f = static_cast<int>(std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& x) {
                                       return x.def.name == fd.name;
                                     }) - fields.begin());
      const FieldInfo& info = fields[static_cast<std::size_t>(f)];
      Var v;
      v.file = static_cast<int>(fi);
      v.name = fd.variable();  // the file's variable; vars_of_field maps the model's field to it
      v.field = f;
      v.grid = hgrid[k];
      v.transfer = f;
      FieldConfig located = fd;  // errors of the levels name the entry of a configuration built in code
      if (located.origin.empty())
        located.origin = "config " + cfg.source + ", file " + fc.name + ", key fields[" + std::to_string(k) + "]";
      v.lmap = detail::level_map(located, info.def.levels, info.def.level_units);
      v.level_values = v.lmap.values.empty() ? info.def.levels : v.lmap.values;
      v.weigh =
          v.lmap.interpolated || std::any_of(v.lmap.fill.begin(), v.lmap.fill.end(), [](char c) { return c != 0; });
      if (v.grid != info.grid || !v.lmap.values.empty()) {
        // A view of the field: its own transfer(s) into the zoomed, level-selected array.
        const i64 n = static_cast<i64>(std::max<std::size_t>(1, v.level_values.size())) *
                      grids[static_cast<std::size_t>(v.grid)].global_size;
        for (int* t : {&v.transfer, &v.transfer2}) {
          if (t == &v.transfer2 && !v.lmap.interpolated) break;
          *t = static_cast<int>(transfers.size());
          Transfer tr;
          tr.n = n;
          tr.view = true;
          transfers.push_back(std::move(tr));
        }
      }
      v.op = fd.operation;
      v.dbl = fd.precision == Precision::f64;
      v.deflate = fd.deflate;
      v.quantize = fd.quantize;
      v.significant = fd.significant;
      v.zstd = fd.zstd;
      v.sampling_s = fd.sampling_freq_s;
      v.fill = fd.fill_value;
      v.has_time = fd.operation != Operation::once;
      v.standard_name = fd.standard_name.empty() ? info.def.standard_name : fd.standard_name;
      v.long_name = fd.long_name.empty() ? info.def.long_name : fd.long_name;
      v.units = fd.units.empty() ? info.def.units : fd.units;
      if (!v.level_values.empty()) {
        auto a = std::find(axes.begin(), axes.end(), v.level_values);
        const std::size_t ai = static_cast<std::size_t>(a - axes.begin());
        if (a == axes.end()) axes.push_back(v.level_values);
        v.shape.push_back(static_cast<i64>(v.level_values.size()));
        v.dim_names.push_back(ai == 0 ? "lev" : "lev" + std::to_string(ai + 1));
      }
      for (i64 s : grids[static_cast<std::size_t>(v.grid)].hshape()) v.shape.push_back(s);
      for (const auto& d : hdims[v.grid]) v.dim_names.push_back(d);
      vars_of_field[fd.name].push_back(static_cast<int>(vars.size()));
      vars.push_back(std::move(v));
    }
    files.push_back(std::move(fs));
  }
}

Decomp Output::Impl::source_of(std::size_t t) const {
  if (!model) return Decomp::empty(transfers[t].n);
  if (t < fields.size()) return fields[t].def.decomp;
  if (transfers[t].view) return Decomp::indices(transfers[t].n, transfers[t].dst);
  // A coordinate transfer: find its grid and kind through a variable that uses it.
  for (const Var& v : vars)
    if (v.transfer == static_cast<int>(t)) {
      const GridInfo& g = grids[static_cast<std::size_t>(v.grid)];
      std::vector<i64> idx;
      if (v.coord < 2) {
        idx = g.points;
      } else {
        for (i64 p : g.points)
          for (int c = 0; c < g.ncorner; ++c) idx.push_back(p * g.ncorner + c);
      }
      return Decomp::indices(transfers[t].n, std::move(idx));
    }
  return Decomp::empty(transfers[t].n);
}

void Output::Impl::build_transfers() {
  RedistOptions opt;
  // One stage of point-to-point messages: start() packs everything and posts the sends, so
  // a model rank's buffer is free when start() returns (the bounded client buffer).
  opt.algorithm = "p2p";
  // A field every variable of which is a view (zoom, levels) is never sent whole: no Redist of
  // the whole field (every rank knows the variables, so all skip alike).
  std::vector<char> whole_used(fields.size(), 0), viewed(fields.size(), 0);
  for (const Var& v : vars) {
    if (v.field < 0) continue;
    std::vector<char>& used = transfers[static_cast<std::size_t>(v.transfer)].view ? viewed : whole_used;
    used[static_cast<std::size_t>(v.field)] = 1;
  }
  for (std::size_t t = 0; t < transfers.size(); ++t) {
    Transfer& tr = transfers[t];
    if (t < fields.size() && viewed[t] && !whole_used[t]) continue;
    if (writer) std::tie(tr.lo, tr.hi) = detail::slab_range(tr.n, nwriters, windex);
    const Decomp dst = writer ? Decomp::stripes(tr.n, {{tr.lo, tr.hi - tr.lo, 1}}) : Decomp::empty(tr.n);
    const Decomp src = source_of(t);
    tr.local_n = src.size();
    try {
      tr.redist = std::make_unique<Redist>(src, dst, xcomm, opt);
    } catch (const Error& e) {
      std::string what = t < fields.size() ? "field " + fields[t].def.name : "grid coordinates";
      for (const Var& v : vars)
        if (tr.view && (v.transfer == static_cast<int>(t) || v.transfer2 == static_cast<int>(t)))
          what = "field " + fields[static_cast<std::size_t>(v.field)].def.name + ", variable " + v.name;
      throw Error(e.fault(), what + ", " + e.where(), e.fix());
    }
    tr.slab.assign(static_cast<std::size_t>(tr.hi - tr.lo), 0.0);
    if (t < fields.size()) stats.largest_slab = std::max(stats.largest_slab, tr.hi - tr.lo);
    if (server_mode)
      for (int k = 0; k < cfg.buffer_records; ++k) {
        tr.slots.push_back(tr.redist->make_exchange({Type::f64}));
        tr.busy.push_back(false);
      }
  }
}

}  // namespace estuary::io
