// Zoom and vertical levels (io/zoom.hpp): the checks of the configuration readers, the boxes'
// longitudes, the level maps; then Output's zoomed grids and the variables' views of their
// fields (the points and levels a rank sends, and where they go in the written array).
#include "io/zoom.hpp"

#include <cmath>
#include <set>
#include <unordered_set>

#include "io/output_impl.hpp"

namespace estuary::io::detail {

namespace {

std::string num(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

}  // namespace

std::string describe(const FieldConfig::Zoom& z) {
  if (z.kind == FieldConfig::Zoom::Kind::box)
    return "lon [" + num(z.west) + ", " + num(z.east) + "], lat [" + num(z.south) + ", " + num(z.north) + "]";
  if (z.kind == FieldConfig::Zoom::Kind::index) {
    auto last = [](std::int64_t v) { return v < 0 ? std::string("last") : std::to_string(v); };
    return "i [" + std::to_string(z.i0) + ", " + last(z.i1) + "], j [" + std::to_string(z.j0) + ", " + last(z.j1) + "]";
  }
  return "none";
}

void check_zoom(const FieldConfig::Zoom& z, const std::string& where) {
  using K = FieldConfig::Zoom::Kind;
  if (z.kind == K::box) {
    if (!std::isfinite(z.west) || !std::isfinite(z.east) || !std::isfinite(z.south) || !std::isfinite(z.north))
      throw Error("a zoom box with a value that is not finite", where);
    if (z.south < -90 || z.north > 90 || z.south > z.north)
      throw Error("zoom latitudes [" + num(z.south) + ", " + num(z.north) + "] are not south <= north within [-90, 90]",
                  where, "give lat: [south, north] in degrees north");
  } else if (z.kind == K::index) {
    if (z.i0 < 0 || z.j0 < 0 || (z.i1 >= 0 && z.i1 < z.i0) || (z.j1 >= 0 && z.j1 < z.j0))
      throw Error("zoom index ranges " + describe(z) + " are not first <= last (0-based, inclusive)", where,
                  "give i: [first column, last column], j: [first row, last row]");
  }
}

void check_levels(const FieldConfig& f, const std::string& where) {
  if (!f.level_indices.empty() && !f.interpolate_levels.values.empty())
    throw Error("levels and interpolate_levels together", where,
                "select levels by index (levels) or interpolate to values (interpolate_levels), not both");
  for (std::size_t k = 0; k < f.level_indices.size(); ++k) {
    if (f.level_indices[k] < 0)
      throw Error("level index " + std::to_string(f.level_indices[k]) + " is negative", where);
    if (k > 0 && f.level_indices[k] <= f.level_indices[k - 1])
      throw Error("level indices are not strictly increasing (" + std::to_string(f.level_indices[k - 1]) + " then " +
                      std::to_string(f.level_indices[k]) + ")",
                  where, "list each level once, top to bottom as the field holds them (0 = the first)");
  }
  const std::vector<double>& v = f.interpolate_levels.values;
  for (std::size_t k = 2; k < v.size(); ++k)
    if ((v[k] - v[k - 1]) * (v[1] - v[0]) <= 0)
      throw Error("interpolation values are not strictly monotonic", where,
                  "list the values in increasing (or decreasing) order");
  if (v.size() == 2 && v[0] == v[1]) throw Error("interpolation values are not strictly monotonic", where);
}

bool lon_in_box(const FieldConfig::Zoom& z, double lon, double& offset) {
  offset = std::fmod(lon - z.west, 360.0);
  if (offset < 0) offset += 360.0;
  if (offset > 360.0 - 1e-9) offset = 0;  // the west edge, up to rounding
  if (z.east - z.west >= 360.0) return true;
  double width = std::fmod(z.east - z.west, 360.0);
  if (width < 0) width += 360.0;
  return offset <= width + 1e-9;
}

const char* level_standard_name(const std::string& units) {
  if (units == "m") return "depth";
  if (units == "Pa" || units == "hPa") return "air_pressure";
  return "model_level_number";
}

LevelMap level_map(const FieldConfig& fc, const std::vector<double>& levels, const std::string& units) {
  const std::string& where = fc.levels_origin.empty() ? fc.origin : fc.levels_origin;
  const std::string field = "field '" + fc.name + "'";
  LevelMap m;
  const std::int64_t n = static_cast<std::int64_t>(levels.size());
  if (!fc.level_indices.empty()) {
    if (levels.empty())
      throw Error("levels selected from " + field + ", which has no levels (a 2-D field)", where,
                  "remove `levels`, or give the model field its levels (FieldDef::levels)");
    for (std::int64_t i : fc.level_indices) {
      if (i >= n)
        throw Error("level index " + std::to_string(i) + " is beyond the " + std::to_string(n) + " levels of " + field,
                    where, "indices count from 0 to " + std::to_string(n - 1));
      m.values.push_back(levels[static_cast<std::size_t>(i)]);
      m.lo.push_back(i);
      m.hi.push_back(i);
      m.w_lo.push_back(1);
      m.w_hi.push_back(0);
      m.fill.push_back(0);
    }
    return m;
  }
  const FieldConfig::LevelInterpolation& ip = fc.interpolate_levels;
  if (ip.values.empty()) return m;
  const std::string axis = level_standard_name(units);
  if (!ip.coordinate.empty() && ip.coordinate != axis && ip.coordinate != "lev")
    throw Error("interpolation coordinate '" + ip.coordinate + "' is not the level axis of " + field + " (" + axis +
                    ", in " + units + ")",
                where,
                "interpolate in the field's own levels (coordinate: " + axis +
                    "); another field as the coordinate is not supported");
  if (n < 2)
    throw Error("interpolation of " + field + ", which has " + std::to_string(n) + (n == 1 ? " level" : " levels"),
                where, "interpolate a field of two levels or more");
  const double dir = levels[1] - levels[0];
  for (std::size_t k = 1; k < levels.size(); ++k)
    if (!((levels[k] - levels[k - 1]) * dir > 0))
      throw Error("the levels of " + field + " are not strictly monotonic, so there is no interpolation in them",
                  where);
  for (double x : ip.values) {
    // The segment [j, j+1] holding x, in the levels' own order; an exact level is taken as it is.
    std::int64_t j = -1, exact = -1;
    for (std::int64_t k = 0; k < n; ++k)
      if (levels[static_cast<std::size_t>(k)] == x) exact = k;
    for (std::int64_t k = 0; k + 1 < n && exact < 0 && j < 0; ++k) {
      const double a = levels[static_cast<std::size_t>(k)], b = levels[static_cast<std::size_t>(k + 1)];
      if ((x - a) * (x - b) < 0) j = k;
    }
    m.values.push_back(x);
    if (exact >= 0) {
      m.lo.push_back(exact);
      m.hi.push_back(exact);
      m.w_lo.push_back(1);
      m.w_hi.push_back(0);
      m.fill.push_back(0);
      continue;
    }
    bool fill = false;
    if (j < 0) {  // outside the levels: XIOS extrapolates from the two end levels
      fill = !ip.extrapolate;
      j = (x - levels[0]) * dir < 0 ? 0 : n - 2;
    }
    const double a = levels[static_cast<std::size_t>(j)], b = levels[static_cast<std::size_t>(j + 1)];
    m.lo.push_back(j);
    m.hi.push_back(j + 1);
    // Lagrange's weights of order 1, as XIOS's interpolate_axis computes them.
    m.w_lo.push_back(fill ? 0.0 : (x - b) / (a - b));
    m.w_hi.push_back(fill ? 0.0 : (x - a) / (b - a));
    m.fill.push_back(fill ? 1 : 0);
    m.interpolated = m.interpolated || !fill;
  }
  return m;
}

}  // namespace estuary::io::detail

namespace estuary::io {

namespace {

using Kind = FieldConfig::Zoom::Kind;

// The zoomed grid's coordinates and mask: those of the rank's parent points that are in it.
void take_local_points(const GridInfo& parent, GridInfo& z) {
  const std::size_t nc = static_cast<std::size_t>(parent.ncorner);
  for (std::size_t k = 0; k < parent.points.size(); ++k) {
    const i64 q = z.zoomed(parent.points[k], parent);
    if (q < 0) continue;
    z.points.push_back(q);
    z.lon.push_back(parent.lon[k]);
    z.lat.push_back(parent.lat[k]);
    for (std::size_t c = 0; c < nc; ++c) {
      z.clon.push_back(parent.clon[k * nc + c]);
      z.clat.push_back(parent.clat[k * nc + c]);
    }
    if (!parent.mask.empty()) z.mask.push_back(parent.mask[k]);
  }
}

// Columns or rows [first, last] of n (last < 0: the last one) as positions; false when outside.
bool index_range(i64 first, i64 last, i64 n, std::vector<i64>& pos) {
  if (last < 0) last = n - 1;
  if (first > last || last >= n) return false;
  pos.assign(static_cast<std::size_t>(n), -1);
  for (i64 i = first; i <= last; ++i) pos[static_cast<std::size_t>(i)] = i - first;
  return true;
}

i64 kept(const std::vector<i64>& pos) {
  return static_cast<i64>(std::count_if(pos.begin(), pos.end(), [](i64 p) { return p >= 0; }));
}

// The sub-axis of a rectilinear axis: values (and bounds) of the kept entries in their new
// order, each moved by `shift[i]` degrees.
void sub_axis(const std::vector<double>& axis, const std::vector<double>& bnds, const std::vector<i64>& pos,
              const std::vector<double>& shift, std::vector<double>& out, std::vector<double>& out_bnds) {
  const i64 m = kept(pos);
  out.assign(static_cast<std::size_t>(m), 0);
  out_bnds.assign(bnds.empty() ? 0 : static_cast<std::size_t>(2 * m), 0);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    if (pos[i] < 0) continue;
    const std::size_t k = static_cast<std::size_t>(pos[i]);
    const double s = shift.empty() ? 0.0 : shift[i];
    out[k] = axis[i] + s;
    if (!bnds.empty()) {
      out_bnds[2 * k] = bnds[2 * i] + s;
      out_bnds[2 * k + 1] = bnds[2 * i + 1] + s;
    }
  }
}

}  // namespace

void Output::Impl::make_zoom_grids() {
  std::vector<FieldConfig::Zoom> zooms;  // distinct, in the configuration's order
  for (const FileConfig& f : cfg.files)
    for (const FieldConfig& fd : f.fields)
      if (fd.zoom.kind != Kind::none && std::find(zooms.begin(), zooms.end(), fd.zoom) == zooms.end())
        zooms.push_back(fd.zoom);
  // Only the grids the zooms apply to: those of the fields listed with a zoom, a derived field
  // taking its inputs' grid (they must agree). A name that resolves to no grid is an error
  // reported later on every rank (plan_vars, DerivedFields::add), so it needs no zoomed grid.
  std::map<std::string, std::size_t> grid_of;
  for (const FieldInfo& f : fields)
    for (std::size_t g = 0; g < grids.size(); ++g)
      if (grids[g].name == f.def.grid) grid_of.emplace(f.def.name, g);
  bool every = false;
  try {
    for (const DerivedDef& d : derived_fields(cfg)) {  // inputs before the fields that use them
      if (d.vars.empty()) continue;
      auto it = grid_of.find(d.vars.front());
      if (it != grid_of.end()) grid_of.emplace(d.name, it->second);
    }
  } catch (const Error&) {
    every = true;  // (the same error comes at DerivedFields::add, after the catalog)
  }
  std::set<std::pair<std::size_t, std::size_t>> needed;  // (grid, zoom)
  for (const FileConfig& f : cfg.files)
    for (const FieldConfig& fd : f.fields) {
      if (fd.zoom.kind == Kind::none) continue;
      const auto g = grid_of.find(fd.name);
      if (g != grid_of.end())
        needed.insert(
            {g->second, static_cast<std::size_t>(std::find(zooms.begin(), zooms.end(), fd.zoom) - zooms.begin())});
    }
  const std::size_t ngrids = grids.size();
  for (std::size_t gi = 0; gi < ngrids; ++gi)
    for (std::size_t zi = 0; zi < zooms.size(); ++zi) {
      if (!every && !needed.count({gi, zi})) continue;
      const GridInfo& par = grids[gi];
      const FieldConfig::Zoom& zm = zooms[zi];
      GridInfo z;
      z.name = par.name + "_zoom" + std::to_string(zi + 1);
      z.kind = par.kind;
      z.ncorner = par.ncorner;
      z.parent = static_cast<int>(gi);
      z.zoom = zm;
      const bool two_d = par.hshape().size() == 2;
      const std::string grid = "grid '" + par.name + "'";
      const std::string shape = two_d ? std::to_string(par.dims[0]) + " x " + std::to_string(par.dims[1])
                                      : std::to_string(par.global_size) + " points";
      if (zm.kind == Kind::index) {
        if (!two_d) {
          z.zoom_error =
              "an index zoom needs a 2-D grid; " + grid + " (" + name_of(par.kind) + ") has one dimension of " + shape;
        } else if (!index_range(zm.i0, zm.i1, par.dims[0], z.ipos) || !index_range(zm.j0, zm.j1, par.dims[1], z.jpos)) {
          z.zoom_error =
              "zoom " + detail::describe(zm) + " is outside " + grid + " of " + shape + " points (i, j from 0)";
        }
        if (z.zoom_error.empty() && par.rectilinear) {
          z.rectilinear = true;
          sub_axis(par.axis_lon, par.axis_lon_bnds, z.ipos, {}, z.axis_lon, z.axis_lon_bnds);
          sub_axis(par.axis_lat, par.axis_lat_bnds, z.jpos, {}, z.axis_lat, z.axis_lat_bnds);
        }
      } else if (par.rectilinear) {
        // Columns by their distance east of the box's west edge (across the date line too),
        // written with longitudes moved by whole turns so that the axis increases; rows as the
        // grid holds them.
        std::vector<std::pair<double, i64>> cols;
        std::vector<double> shift(par.axis_lon.size(), 0.0);
        for (std::size_t i = 0; i < par.axis_lon.size(); ++i) {
          double off = 0;
          if (!detail::lon_in_box(zm, par.axis_lon[i], off)) continue;
          cols.push_back({off, static_cast<i64>(i)});
          shift[i] = 360.0 * std::round((zm.west + off - par.axis_lon[i]) / 360.0);
        }
        std::sort(cols.begin(), cols.end());
        z.ipos.assign(par.axis_lon.size(), -1);
        for (std::size_t k = 0; k < cols.size(); ++k)
          z.ipos[static_cast<std::size_t>(cols[k].second)] = static_cast<i64>(k);
        z.jpos.assign(par.axis_lat.size(), -1);
        i64 rows = 0;
        for (std::size_t j = 0; j < par.axis_lat.size(); ++j)
          if (detail::lat_in_box(zm, par.axis_lat[j])) z.jpos[j] = rows++;
        z.rectilinear = true;
        sub_axis(par.axis_lon, par.axis_lon_bnds, z.ipos, shift, z.axis_lon, z.axis_lon_bnds);
        sub_axis(par.axis_lat, par.axis_lat_bnds, z.jpos, {}, z.axis_lat, z.axis_lat_bnds);
      } else if (two_d) {
        // A curvilinear grid: the smallest index rectangle holding every point in the box (as
        // XIOS's zoom keeps index ranges); its other points are written as they are.
        const i64 nx = par.dims[0];
        i64 r[4] = {std::numeric_limits<i64>::min(), std::numeric_limits<i64>::min(), std::numeric_limits<i64>::min(),
                    std::numeric_limits<i64>::min()};  // max i, max j, max -i, max -j
        for (std::size_t k = 0; k < par.points.size(); ++k) {
          double off = 0;
          if (!detail::lon_in_box(zm, par.lon[k], off) || !detail::lat_in_box(zm, par.lat[k])) continue;
          const i64 i = par.points[k] % nx, j = par.points[k] / nx;
          r[0] = std::max(r[0], i);
          r[1] = std::max(r[1], j);
          r[2] = std::max(r[2], -i);
          r[3] = std::max(r[3], -j);
        }
        estuary::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, r, 4, MPI_INT64_T, MPI_MAX, model_comm),
                                   "MPI_Allreduce");
        if (r[0] >= 0) {
          index_range(-r[2], r[0], nx, z.ipos);
          index_range(-r[3], r[1], par.dims[1], z.jpos);
        }
      } else {
        renumber_box(par, z);
      }
      if (z.zoom_error.empty() && !z.ipos.empty()) {
        z.dims = {kept(z.ipos), kept(z.jpos)};
        z.global_size = z.dims[0] * z.dims[1];
      }
      if (z.zoom_error.empty() && z.global_size == 0)
        z.zoom_error = "no point of " + grid + " lies in the zoom box " + detail::describe(zm);
      if (z.zoom_error.empty()) take_local_points(par, z);
      grids.push_back(std::move(z));
    }
}

void Output::Impl::renumber_box(const GridInfo& par, GridInfo& z) {
  // A reduced or unstructured grid: the points inside the box, in the grid's order. Each rank
  // flags its points; a Redist brings the flags to contiguous slabs of the grid (one a model
  // rank), where a prefix count over the slabs numbers the points inside; the numbers go back
  // the same way. No rank holds more than its slab of the grid.
  int p = 1, r = 0;
  MPI_Comm_size(model_comm, &p);
  MPI_Comm_rank(model_comm, &r);
  const i64 n = par.global_size;
  const auto [lo, hi] = detail::slab_range(n, p, r);
  RedistOptions opt;
  opt.plan.missing = MissingPolicy::fill;             // a point no rank holds: outside (0)
  opt.plan.duplicate = DuplicatePolicy::lowest_rank;  // halo points: one flag
  const Decomp mine = Decomp::indices(n, par.points), slab = Decomp::stripes(n, {{lo, hi - lo, 1}});
  std::vector<double> flag(par.points.size()), number(static_cast<std::size_t>(hi - lo));
  for (std::size_t k = 0; k < par.points.size(); ++k) {
    double off = 0;
    flag[k] = detail::lon_in_box(z.zoom, par.lon[k], off) && detail::lat_in_box(z.zoom, par.lat[k]) ? 1.0 : 0.0;
  }
  Redist(mine, slab, model_comm, opt)
      .run({Field(Type::f64, flag.data(), static_cast<i64>(flag.size()), number.data(),
                  static_cast<i64>(number.size()))});
  i64 count = 0;
  for (double& x : number) x = x != 0 ? static_cast<double>(count++) : -1.0;
  i64 base = 0, total = 0;
  estuary::detail::check_mpi(MPI_Exscan(&count, &base, 1, MPI_INT64_T, MPI_SUM, model_comm), "MPI_Exscan");
  if (r == 0) base = 0;  // MPI_Exscan leaves rank 0's result undefined
  estuary::detail::check_mpi(MPI_Allreduce(&count, &total, 1, MPI_INT64_T, MPI_SUM, model_comm), "MPI_Allreduce");
  for (double& x : number)
    if (x >= 0) x += static_cast<double>(base);
  RedistOptions back;
  Redist(slab, mine, model_comm, back)
      .run({Field(Type::f64, number.data(), static_cast<i64>(number.size()), flag.data(),
                  static_cast<i64>(flag.size()))});
  for (std::size_t k = 0; k < par.points.size(); ++k)
    if (flag[k] >= 0) z.renumber[par.points[k]] = static_cast<i64>(flag[k]);
  z.dims = {total};
  z.global_size = total;
  z.kind = GridKind::unstructured;  // the points kept, one dimension (cell)
}

int Output::Impl::zoom_grid_of(int g, const FieldConfig& fd, const std::string& where) const {
  for (std::size_t k = 0; k < grids.size(); ++k) {
    const GridInfo& z = grids[k];
    if (z.parent != g || !(z.zoom == fd.zoom)) continue;
    if (!z.zoom_error.empty())
      throw Error(z.zoom_error + " (field '" + fd.name + "')", where,
                  "give a zoom within the grid: a lon-lat box {lon: [w, e], lat: [s, n]} or 0-based index ranges {i: "
                  "[i0, i1], j: [j0, j1]}");
    return static_cast<int>(k);
  }
  throw Error("no zoomed grid for zoom " + detail::describe(fd.zoom) + " of field '" + fd.name + "'", where,
              "an internal error: report it");
}

void Output::Impl::plan_views() {
  for (const Var& v : vars) {
    if (v.field < 0) continue;
    const int ts[2] = {v.transfer, v.transfer2};
    const FieldInfo& f = fields[static_cast<std::size_t>(v.field)];
    const GridInfo& par = grids[static_cast<std::size_t>(f.grid)];
    const GridInfo& hz = grids[static_cast<std::size_t>(v.grid)];
    const bool zoomed = v.grid != f.grid;
    std::unordered_set<i64> held;  // 1-D zooms: the parent points of this rank's grid part
    const std::vector<i64> idx =
        transfers[static_cast<std::size_t>(v.transfer)].view ? f.def.decomp.to_indices() : std::vector<i64>{};
    for (int side = 0; side < 2; ++side) {
      if (ts[side] < 0 || !transfers[static_cast<std::size_t>(ts[side])].view) continue;
      Transfer& tr = transfers[static_cast<std::size_t>(ts[side])];
      tr.pick.clear();
      tr.dst.clear();
      // The written levels each source level feeds (a level may feed several, or none).
      const std::size_t nsrc = std::max<std::size_t>(1, f.def.levels.size());
      std::vector<std::vector<i64>> feeds(nsrc);
      if (v.lmap.values.empty()) {
        for (std::size_t l = 0; l < nsrc; ++l) feeds[l].push_back(static_cast<i64>(l));
      } else {
        const std::vector<i64>& src = side == 0 ? v.lmap.lo : v.lmap.hi;
        for (std::size_t k = 0; k < src.size(); ++k)
          feeds[static_cast<std::size_t>(src[k])].push_back(static_cast<i64>(k));
      }
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const i64 lev = idx[i] / par.global_size, pt = idx[i] % par.global_size;
        if (feeds[static_cast<std::size_t>(lev)].empty()) continue;
        i64 q = pt;
        if (zoomed) {
          if (hz.ipos.empty() && held.empty()) held.insert(par.points.begin(), par.points.end());
          if (hz.ipos.empty() && !held.count(pt))
            throw Error("value " + std::to_string(i) + " lies on point " + std::to_string(pt) + " of grid " + par.name +
                            ", which this rank's def_grid part does not hold, so whether the zoom keeps it is unknown",
                        "field " + f.def.name + ", variable " + v.name + ", " + where_rank(),
                        "def_grid the points the field holds on each rank");
          q = hz.zoomed(pt, par);
          if (q < 0) continue;
        }
        for (i64 k : feeds[static_cast<std::size_t>(lev)]) {
          tr.pick.push_back(static_cast<i64>(i));
          tr.dst.push_back(k * hz.global_size + q);
        }
      }
    }
  }
}

const std::vector<double>& Output::Impl::slab_of(Var& v) {
  const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
  if (!v.weigh) return tr.slab;
  // Interpolated levels: w_lo * lower + w_hi * upper, the fill value where a level lies outside
  // the field's (without extrapolation) or where a weighed value is the fill value (masked).
  const std::vector<double>* upper =
      v.transfer2 >= 0 ? &transfers[static_cast<std::size_t>(v.transfer2)].slab : nullptr;
  const i64 gsize = grids[static_cast<std::size_t>(v.grid)].global_size;
  v.weighed.resize(tr.slab.size());
  for (std::size_t e = 0; e < tr.slab.size(); ++e) {
    const std::size_t k = static_cast<std::size_t>((tr.lo + static_cast<i64>(e)) / gsize);
    const double a = tr.slab[e];
    if (v.lmap.fill[k]) {
      v.weighed[e] = kFillValue;
    } else if (v.lmap.lo[k] == v.lmap.hi[k]) {
      v.weighed[e] = a;
    } else {
      const double b = (*upper)[e];
      v.weighed[e] = a == kFillValue || b == kFillValue ? kFillValue : v.lmap.w_lo[k] * a + v.lmap.w_hi[k] * b;
    }
  }
  return v.weighed;
}

}  // namespace estuary::io
