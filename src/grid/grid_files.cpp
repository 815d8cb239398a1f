// OASIS grid files (grids.nc, masks.nc, areas.nc) and SCRIP grid files: readers into any
// decomposition and the one-variable OASIS writer (see estuary/grid_files.hpp).
//
// Reading: each rank reads the band of rows that holds its points (one hyperslab per variable,
// not one read per point), so a block or box decomposition reads about its own share; a
// scattered decomposition reads up to the whole variable, which stays cheap next to the weight
// generation the grid is read for.
#include "estuary/grid_files.hpp"


#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <numbers>
#include <optional>
#include <set>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "ncfile/ncfile.hpp"

namespace estuary {

using i64 = std::int64_t;

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string folder_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string();
}

std::string join_path(const std::string& dir, const std::string& file) {
  return dir.empty() ? file : (std::filesystem::path(dir) / file).string();
}

// The rows [r0, r1] of a point shape {.., nx} (nx = 1 for 1-D) that hold `idx`; empty idx: none.
struct Band {
  i64 first = 0, count = 0;  // flat point indices [first, first + count) read
  i64 r0 = 0, rows = 0;      // the same as rows of the innermost dimension
};

Band band_of(const std::vector<i64>& idx, i64 nx) {
  Band b;
  if (idx.empty()) return b;
  const auto [lo, hi] = std::minmax_element(idx.begin(), idx.end());
  b.r0 = *lo / nx;
  b.rows = *hi / nx - b.r0 + 1;
  b.first = b.r0 * nx;
  b.count = b.rows * nx;
  return b;
}

// A variable of a grid file seen as [lead] x points: lead = corners (0 when none), the point
// dimensions trailing (1 or 2 of them; their product is the grid's size).
struct VarShape {
  int varid = -1;
  int lead = 0;                 // corners (a leading dimension), 0: none
  std::vector<i64> pdims;       // the point dimensions, slowest first (netCDF order)
  i64 points() const {
    i64 n = 1;
    for (i64 d : pdims) n *= d;
    return n;
  }
};

VarShape shape_of(const detail::NcFile& f, const std::string& var, bool corners, bool point_major_corners) {
  VarShape s;
  s.varid = f.var(var);
  std::vector<i64> shape = f.var_shape(s.varid);
  if (corners) {
    if (shape.size() < 2)
      throw Error("variable " + var + " has " + std::to_string(shape.size()) + " dimension(s), corners need 2 or 3",
                  "file " + f.path() + ", variable " + var);
    if (point_major_corners) {  // SCRIP: (grid_size, grid_corners)
      s.lead = static_cast<int>(shape.back());
      shape.pop_back();
    } else {  // OASIS: (crn, y, x)
      s.lead = static_cast<int>(shape.front());
      shape.erase(shape.begin());
    }
  }
  if (shape.empty() || shape.size() > 2)
    throw Error("variable " + var + " has " + std::to_string(shape.size() + (corners ? 1 : 0)) +
                    " dimensions, a grid variable 1 or 2 (plus corners)",
                "file " + f.path() + ", variable " + var);
  s.pdims = shape;
  return s;
}

// Reads the rank's points `idx` (local order) of a variable: n values, or n * lead values
// point-major (corner c of local point k at k * lead + c) when the variable has corners.
template <class T>
std::vector<T> read_points(const detail::NcFile& f, const VarShape& s,
                           const std::vector<i64>& idx, bool point_major_corners) {
  const std::size_t n = idx.size(), lead = static_cast<std::size_t>(std::max(s.lead, 0));
  std::vector<T> out(n * std::max<std::size_t>(lead, 1));
  if (n == 0) return out;
  const i64 nx = s.pdims.back();
  const Band b = band_of(idx, nx);
  std::vector<std::size_t> start, count;
  if (s.lead > 0 && !point_major_corners) {
    start.push_back(0);
    count.push_back(lead);
  }
  if (s.pdims.size() == 2) {
    start.push_back(static_cast<std::size_t>(b.r0));
    count.push_back(static_cast<std::size_t>(b.rows));
    start.push_back(0);
    count.push_back(static_cast<std::size_t>(nx));
  } else {
    start.push_back(static_cast<std::size_t>(b.first));
    count.push_back(static_cast<std::size_t>(b.count));
  }
  if (s.lead > 0 && point_major_corners) {
    start.push_back(0);
    count.push_back(lead);
  }
  std::vector<T> buf(static_cast<std::size_t>(b.count) * std::max<std::size_t>(lead, 1));
  f.get(s.varid, start.data(), count.data(), buf.data());
  const std::size_t band = static_cast<std::size_t>(b.count);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t at = static_cast<std::size_t>(idx[k] - b.first);
    if (lead == 0) {
      out[k] = buf[at];
    } else {
      for (std::size_t c = 0; c < lead; ++c)
        out[k * lead + c] = point_major_corners ? buf[at * lead + c] : buf[c * band + at];
    }
  }
  return out;
}

// The scale turning a .srf/grid_area into steradians from its units attribute: 0 when it does
// not say (the values decide then).
double area_scale_from_units(const std::string& units) {
  const std::string u = lower(units);
  if (u.empty()) return 0.0;
  if (u.find("rad") != std::string::npos || u.find("sr") == 0 || u.find("steradian") != std::string::npos) return 1.0;
  if (u == "m2" || u == "m^2" || u == "m**2" || u == "m 2" || u.find("square m") != std::string::npos ||
      u.find("meter") != std::string::npos || u.find("metre") != std::string::npos)
    return 1.0 / (kOasisEarthRadius * kOasisEarthRadius);
  return 0.0;
}

// Degrees from a SCRIP coordinate whose units may say radians.
double degrees_scale(const std::string& units) {
  return lower(units).rfind("rad", 0) == 0 ? 180.0 / std::numbers::pi : 1.0;
}

// Finishes a read grid collectively: area units decided over comm, areas from corners when
// the file had none (as def_grid does), kind and points.
void finish(Grid& g, const Decomp& part, double area_scale, bool had_area, MPI_Comm comm) {
  int any_area = had_area ? 1 : 0;
  double local_max = 0.0;
  for (double a : g.area) local_max = std::max(local_max, std::abs(a));
  double big = local_max;
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any_area, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (any_area && g.size() > 0) {
    // No cell measured in rad^2 exceeds the sphere's 4 pi; any real cell in m^2 does.
    const double scale = area_scale > 0 ? area_scale
                         : big > 4 * std::numbers::pi * (1 + 1e-9) ? 1.0 / (kOasisEarthRadius * kOasisEarthRadius)
                                                                   : 1.0;
    if (scale != 1.0)
      for (double& a : g.area) a *= scale;
  }
  g.points = part.to_indices();
  g.check();
  if (g.area.empty() && g.ncorner >= 3) g.compute_areas();
}

}  // namespace

OasisGridFiles OasisGridFiles::in(const std::string& directory) {
  return {join_path(directory, "grids.nc"), join_path(directory, "masks.nc"), join_path(directory, "areas.nc")};
}

OasisGridFiles OasisGridFiles::next_to(const std::string& grids_path) {
  const std::string dir = folder_of(grids_path);
  return {grids_path, join_path(dir, "masks.nc"), join_path(dir, "areas.nc")};
}

bool oasis_grid_var_exists(const std::string& path, const std::string& var) {
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  if (!std::filesystem::exists(path)) return false;
  const detail::NcFile f = detail::NcFile::open(path);
  return f.find_var(var) >= 0;
}

std::vector<std::string> oasis_grid_names(const std::string& grids_path) {
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  const detail::NcFile f = detail::NcFile::open(grids_path);
  const int nvars = f.nvars();
  std::set<std::string> names;
  for (int v = 0; v < nvars; ++v) {
    const std::string s = f.var_name(v);
    if (s.size() > 4 && s.compare(s.size() - 4, 4, ".lon") == 0) {
      const std::string g = s.substr(0, s.size() - 4);
      if (f.find_var(g + ".lat") >= 0) names.insert(g);
    }
  }
  return {names.begin(), names.end()};
}

GridFileInfo grid_file_info(const std::string& path, const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  GridFileInfo info;
  const detail::NcFile f = detail::NcFile::open(path);
  if (f.find_var("grid_center_lat") >= 0) {
    info.format = "scrip";
    info.name = f.text_att("title");
    if (info.name.empty()) info.name = std::filesystem::path(path).stem().string();
    info.size = f.dim_len("grid_size");
    const int vd = f.find_var("grid_dims");
    if (vd >= 0) {
      const i64 rank = f.var_shape(vd).at(0);
      std::vector<int> d(static_cast<std::size_t>(rank));
      f.get(vd, d.data());
      info.dims.assign(d.begin(), d.end());
    }
    if (info.dims.size() != 2 || info.dims[0] * info.dims[1] != info.size) info.dims = {info.size};
    const int vc = f.find_var("grid_corner_lat");
    info.ncorner = vc >= 0 ? static_cast<int>(f.var_shape(vc).back()) : 0;
    info.mask = f.find_var("grid_imask") >= 0;
    info.area = f.find_var("grid_area") >= 0;
    return info;
  }
  info.format = "oasis";
  std::string g = name;
  if (g.empty()) {
    const std::vector<std::string> all = oasis_grid_names(path);
    if (all.size() != 1) {
      std::string list;
      for (const std::string& s : all) list += (list.empty() ? "" : ", ") + s;
      throw Error(all.empty() ? "no grid (no <grid>.lon with <grid>.lat) in the file"
                              : "the file holds several grids (" + list + ")",
                  "file " + path, all.empty() ? "give a SCRIP or OASIS grid file" : "name one: FILE:GRID");
    }
    g = all.front();
  }
  info.name = g;
  const VarShape s = shape_of(f, g + ".lon", false, false);
  info.size = s.points();
  info.dims = s.pdims.size() == 2 && s.pdims[0] > 1 ? std::vector<i64>{s.pdims[1], s.pdims[0]} : std::vector<i64>{info.size};
  const int vc = f.find_var(g + ".clo");
  info.ncorner = vc >= 0 ? static_cast<int>(f.var_shape(vc).front()) : 0;
  const OasisGridFiles files = OasisGridFiles::next_to(path);
  info.mask = oasis_grid_var_exists(files.masks, g + ".msk");
  info.area = oasis_grid_var_exists(files.areas, g + ".srf");
  return info;
}

namespace {
// The points idx of grid `name`'s mask in masks.nc, OASIS's 1 = masked turned into Grid's 0;
// false when masks.nc or the variable is absent. Holds no lock: the caller does.
bool mask_points(const OasisGridFiles& files, const std::string& name, i64 n, const std::vector<i64>& idx,
                 const std::string& ctx, std::vector<std::int32_t>& mask) {
  if (!std::filesystem::exists(files.masks)) return false;
  const detail::NcFile mf = detail::NcFile::open(files.masks);
  if (mf.find_var(name + ".msk") < 0) return false;
  const VarShape sm = shape_of(mf, name + ".msk", false, false);
  if (sm.points() != n)
    throw Error(name + ".msk has " + std::to_string(sm.points()) + " points, the grid " + std::to_string(n),
                "file " + files.masks + ", variable " + name + ".msk" + ctx);
  const std::vector<int> m = read_points<int>(mf, sm, idx, false);
  mask.resize(m.size());
  for (std::size_t k = 0; k < m.size(); ++k) mask[k] = m[k] == 0 ? 1 : 0;
  return true;
}
}  // namespace

std::vector<std::int32_t> read_oasis_mask(const OasisGridFiles& files, const std::string& name, const Decomp& part,
                                 MPI_Comm comm, const std::string& context) {
  std::vector<std::int32_t> mask;
  const std::vector<i64> idx = part.to_indices();
  const std::string ctx = context.empty() ? "" : ", " + context;
  detail::agree(comm, [&] {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    mask_points(files, name, part.global_size(), idx, ctx, mask);
  });
  return mask;
}

Grid read_oasis_grid(const OasisGridFiles& files, const std::string& name, const Decomp& part, MPI_Comm comm,
                     const GridFileNeeds& needs) {
  Grid g;
  double area_scale = 0.0;
  bool had_area = false;
  const std::vector<i64> idx = part.to_indices();
  const std::string ctx = needs.context.empty() ? "" : ", " + needs.context;
  detail::agree(comm, [&] {
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    // A missing file or variable: named with the grid and what needs it.
    const auto missing = [&](const std::string& path, const std::string& var) {
      throw Error("variable " + var + " of grid " + name + " is missing from " +
                      std::filesystem::path(path).filename().string() +
                      (std::filesystem::exists(path) ? "" : " (the file does not exist)"),
                  "file " + path + ", variable " + var + ctx,
                  "write it with the grid-writing calls (write_grid, write_corner, write_mask, write_area) "
                  "before enddef, put it in the file, or give the grid with def_grid");
    };
    if (!std::filesystem::exists(files.grids)) missing(files.grids, name + ".lon");
    const detail::NcFile gf = detail::NcFile::open(files.grids);
    if (gf.find_var(name + ".lon") < 0) missing(files.grids, name + ".lon");
    if (gf.find_var(name + ".lat") < 0) missing(files.grids, name + ".lat");
    const VarShape slon = shape_of(gf, name + ".lon", false, false), slat = shape_of(gf, name + ".lat", false, false);
    const i64 n = slon.points();
    if (slat.points() != n)
      throw Error(name + ".lon has " + std::to_string(n) + " points, " + name + ".lat " + std::to_string(slat.points()),
                  "file " + files.grids + ctx);
    if (n != part.global_size())
      throw Error("grid " + name + " has " + std::to_string(n) + " points in " + files.grids + ", the partition " +
                      std::to_string(part.global_size()),
                  "file " + files.grids + ", variable " + name + ".lon" + ctx,
                  "the grid's nx * ny must be the size of the partition its fields are defined on");
    g.name = name;
    g.global_size = n;
    const bool two_d = slon.pdims.size() == 2 && slon.pdims[0] > 1;
    g.dims = two_d ? std::vector<i64>{slon.pdims[1], slon.pdims[0]} : std::vector<i64>{n};
    g.kind = two_d ? GridKind::curvilinear : GridKind::unstructured;
    g.lon = read_points<double>(gf, slon, idx, false);
    g.lat = read_points<double>(gf, slat, idx, false);
    // Corners: .clo and .cla (crn, y, x).
    const bool has_clo = gf.find_var(name + ".clo") >= 0, has_cla = gf.find_var(name + ".cla") >= 0;
    if (needs.corners && !has_clo) missing(files.grids, name + ".clo");
    if (needs.corners && !has_cla) missing(files.grids, name + ".cla");
    if (has_clo && has_cla) {
      const VarShape sclo = shape_of(gf, name + ".clo", true, false), scla = shape_of(gf, name + ".cla", true, false);
      if (sclo.points() != n || scla.points() != n || sclo.lead != scla.lead || sclo.lead < 1)
        throw Error("the corners " + name + ".clo and " + name + ".cla do not match the " + std::to_string(n) +
                        " points of " + name + ".lon",
                    "file " + files.grids + ctx, "corners are (nx, ny, nc) arrays: netCDF dims (nc, ny, nx)");
      g.ncorner = sclo.lead;
      g.corner_lon = read_points<double>(gf, sclo, idx, false);
      g.corner_lat = read_points<double>(gf, scla, idx, false);
    }
    if (!mask_points(files, name, n, idx, ctx, g.mask) && needs.mask) missing(files.masks, name + ".msk");
    // Areas.
    std::optional<detail::NcFile> af;
    if (std::filesystem::exists(files.areas)) af.emplace(detail::NcFile::open(files.areas));
    if (af && af->find_var(name + ".srf") >= 0) {
      const VarShape sa = shape_of(*af, name + ".srf", false, false);
      if (sa.points() != n)
        throw Error(name + ".srf has " + std::to_string(sa.points()) + " points, the grid " + std::to_string(n),
                    "file " + files.areas + ", variable " + name + ".srf" + ctx);
      g.area = read_points<double>(*af, sa, idx, false);
      area_scale = area_scale_from_units(af->text_att("units", sa.varid));
      had_area = true;
    } else if (needs.area) {
      missing(files.areas, name + ".srf");
    }
  });
  finish(g, part, area_scale, had_area, comm);
  return g;
}

Grid read_scrip_grid(const std::string& path, const Decomp& part, MPI_Comm comm, const GridFileNeeds& needs) {
  Grid g;
  double area_scale = 1.0;  // SCRIP's grid_area is in steradians unless its units say otherwise
  bool had_area = false;
  const std::vector<i64> idx = part.to_indices();
  const std::string ctx = needs.context.empty() ? "" : ", " + needs.context;
  detail::agree(comm, [&] {
    const GridFileInfo info = grid_file_info(path);
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    const detail::NcFile f = detail::NcFile::open(path);
    const auto missing = [&](const std::string& var) {
      throw Error("variable " + var + " is missing from the SCRIP grid file", "file " + path + ", variable " + var + ctx);
    };
    if (info.size != part.global_size())
      throw Error("the grid has " + std::to_string(info.size) + " points, the decomposition " +
                      std::to_string(part.global_size()),
                  "file " + path + ctx);
    g.name = info.name;
    g.global_size = info.size;
    g.dims = info.dims;
    g.kind = info.dims.size() == 2 ? GridKind::curvilinear : GridKind::unstructured;
    for (const char* v : {"grid_center_lon", "grid_center_lat"}) {
      if (f.find_var(v) < 0) missing(v);
      const VarShape s = shape_of(f, v, false, true);
      std::vector<double> x = read_points<double>(f, s, idx, true);
      const double k = degrees_scale(f.text_att("units", s.varid));
      if (k != 1.0)
        for (double& a : x) a *= k;
      (std::string(v).ends_with("lon") ? g.lon : g.lat) = std::move(x);
    }
    if (info.ncorner > 0 && f.find_var("grid_corner_lon") >= 0) {
      for (const char* v : {"grid_corner_lon", "grid_corner_lat"}) {
        const VarShape s = shape_of(f, v, true, true);
        std::vector<double> x = read_points<double>(f, s, idx, true);
        const double k = degrees_scale(f.text_att("units", s.varid));
        if (k != 1.0)
          for (double& a : x) a *= k;
        (std::string(v).ends_with("lon") ? g.corner_lon : g.corner_lat) = std::move(x);
      }
      g.ncorner = info.ncorner;
    } else if (needs.corners) {
      missing("grid_corner_lon");
    }
    if (f.find_var("grid_imask") >= 0) {
      const std::vector<int> m = read_points<int>(f, shape_of(f, "grid_imask", false, true), idx, true);
      g.mask.assign(m.begin(), m.end());
      for (std::int32_t& v : g.mask) v = v != 0 ? 1 : 0;
    } else if (needs.mask) {
      missing("grid_imask");
    }
    if (f.find_var("grid_area") >= 0) {
      const VarShape s = shape_of(f, "grid_area", false, true);
      g.area = read_points<double>(f, s, idx, true);
      const double k = area_scale_from_units(f.text_att("units", s.varid));
      area_scale = k > 0 ? k : 1.0;
      had_area = true;
    } else if (needs.area) {
      missing("grid_area");
    }
  });
  finish(g, part, area_scale, had_area, comm);
  return g;
}

Grid read_grid_file(const std::string& path, const std::string& name, const Decomp& part, MPI_Comm comm,
                    const GridFileNeeds& needs) {
  GridFileInfo info;
  detail::agree(comm, [&] { info = grid_file_info(path, name); });
  if (info.format == "scrip") return read_scrip_grid(path, part, comm, needs);
  return read_oasis_grid(OasisGridFiles::next_to(path), info.name, part, comm, needs);
}

bool write_oasis_grid_var(const std::string& path, const std::string& grid, const std::string& suffix, i64 nx, i64 ny,
                          int nc, std::span<const double> values) {
  std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
  const std::string var = grid + suffix;
  const bool corners = suffix == ".clo" || suffix == ".cla", integer = suffix == ".msk";
  const i64 want = nx * ny * (corners ? nc : 1);
  if (static_cast<i64>(values.size()) != want)
    throw Error(var + " has " + std::to_string(values.size()) + " values, nx * ny" + (corners ? " * nc " : " ") + "= " +
                    std::to_string(want),
                "file " + path + ", variable " + var);
  const bool exists = std::filesystem::exists(path);
  detail::NcFile f = exists ? detail::NcFile::open(path, true) : detail::NcFile::create(path);
  if (f.find_var(var) >= 0) return false;  // OASIS never overwrites a grid field
  if (exists) f.redef();
  // A dimension of the grid, added when absent; one of another length means another grid of
  // the same name is in the file already.
  const auto dim = [&](const std::string& dname, i64 len) {
    const int d = f.find_dim(dname);
    if (d < 0) return f.def_dim(dname, len);
    if (f.dim_len(d) != len)
      throw Error("dimension " + dname + " is " + std::to_string(f.dim_len(d)) + " in the file, grid " + grid +
                      " needs " + std::to_string(len),
                  "file " + path + ", variable " + var,
                  "another grid named " + grid + " is in the file already: rename one, or remove the file");
    return d;
  };
  std::vector<int> dims;
  if (corners) dims.push_back(dim("crn_" + grid, nc));
  dims.push_back(dim("y_" + grid, ny));
  dims.push_back(dim("x_" + grid, nx));
  const int v = f.def_var(var, integer ? detail::NcFile::kInt : detail::NcFile::kDouble, dims);
  // Units help CDO and ncview; OASIS writes none and reads none.
  if (suffix == ".lon" || suffix == ".clo") f.put_att("units", "degrees_east", v);
  if (suffix == ".lat" || suffix == ".cla") f.put_att("units", "degrees_north", v);
  if (integer) f.put_att("long_name", "OASIS mask: 1 masked, 0 valid", v);
  f.enddef();
  if (integer) {
    std::vector<int> iv(values.size());
    for (std::size_t k = 0; k < values.size(); ++k) iv[k] = static_cast<int>(std::lround(values[k]));
    f.put(v, iv.data());
  } else {
    f.put(v, values.data());
  }
  f.close();
  return true;
}

}  // namespace estuary
