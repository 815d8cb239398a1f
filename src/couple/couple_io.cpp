// netCDF files of the coupler (see couple_io.hpp).
#include "couple/couple_io.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "common/cf_calendar.hpp"
#include "common/checked.hpp"
#include "estuary/error.hpp"
#include "ncfile/ncfile.hpp"

namespace estuary::detail {

namespace {
using i64 = std::int64_t;

bool grid2d(const std::vector<i64>& dims, i64 global) {
  return dims.size() == 2 && dims[0] * dims[1] == global;
}

// The spatial dimension ids of variable `name` (defined when absent).
std::vector<int> space_dims(NcFile& f, const std::string& name, i64 global, const std::vector<i64>& dims) {
  if (grid2d(dims, global)) {
    const std::string y = "y_" + name, x = "x_" + name;
    return {f.def_dim(y, dims[1]), f.def_dim(x, dims[0])};
  }
  return {f.def_dim("n_" + name, global)};
}
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}


}  // namespace

FileGrid read_file_grid(const std::string& directory, const std::string& name, i64 global) {
  FileGrid g;
  g.name = name;
  const std::string dir = directory.empty() ? std::string() : directory + "/";
  // A variable of `count` values (any shape), or false.
  const auto read = [](const NcFile& f, const std::string& var, i64 count, auto& out) {
    const int v = f.find_var(var);
    if (v < 0) return false;
    i64 n = 1;
    for (i64 d : f.var_shape(v)) n *= d;
    if (n != count) return false;
    out.resize(static_cast<std::size_t>(count));
    f.get(v, out.data());
    return true;
  };
  if (name.empty()) return g;
  if (std::filesystem::exists(dir + "grids.nc")) {
    const NcFile f = NcFile::open(dir + "grids.nc");
    if (read(f, name + ".lon", global, g.lon) && read(f, name + ".lat", global, g.lat)) {
      const int c = f.find_var(name + ".clo");
      const std::vector<i64> shape = c >= 0 ? f.var_shape(c) : std::vector<i64>{};
      const int corners = shape.size() >= 2 ? static_cast<int>(shape[0]) : 0;
      if (corners > 0 && read(f, name + ".clo", corners * global, g.clo) &&
          read(f, name + ".cla", corners * global, g.cla))
        g.corners = corners;
    } else {
      g.lon.clear(), g.lat.clear();
    }
  }
  if (std::filesystem::exists(dir + "masks.nc")) {
    const NcFile f = NcFile::open(dir + "masks.nc");
    if (!read(f, name + ".msk", global, g.masked)) g.masked.clear();
  }
  return g;
}

void append_records(const std::string& path, const std::vector<std::string>& names, double t,
                    const std::vector<double>& values, i64 global, const std::vector<i64>& dims,
                    const RecordFile& file) {
  const FileGrid* grid = file.grid && !file.grid->name.empty() ? file.grid : nullptr;
  const bool masked = grid && !grid->masked.empty();
  if (!std::filesystem::exists(path)) {
    NcFile f = NcFile::create(path, global > (i64{1} << 28));
    const int td = f.def_dim("time", detail::NcFile::kUnlimited);
    const int tv = f.def_var("time", detail::NcFile::kDouble, {td});
    const std::string start = file.start_date.empty() ? kDefaultStartDate : file.start_date;
    f.put_att("standard_name", "time", tv);
    f.put_att("long_name", "model time", tv);
    f.put_att("units", "seconds since " + start, tv);
    f.put_att("calendar", file.calendar, tv);
    f.put_att("axis", "T", tv);
    if (file.start_date.empty())
      f.put_att("comment", "the configuration gives no start date (YAML start_date, namcouple $INIDATE): times count "
                           "from " + std::string(kDefaultStartDate) + ", estuary's default");
    // One grid for every variable: its dimensions, named after it as in OASIS's grids.nc, and
    // its coordinates; without a grid name, dimensions per variable.
    std::vector<int> shared;
    if (grid) shared = space_dims(f, grid->name, global, dims);
    const bool coords = grid && !grid->lon.empty();
    if (coords) {
      std::vector<int> bd = shared;
      if (grid->corners > 0) bd.push_back(f.def_dim("nv", grid->corners));
      for (const auto& [var, std_name, units, bounds] :
           {std::tuple{"lon", "longitude", "degrees_east", "lon_bnds"}, std::tuple{"lat", "latitude", "degrees_north", "lat_bnds"}}) {
        const int v = f.def_var(var, detail::NcFile::kDouble, shared);
        f.put_att("standard_name", std_name, v);
        f.put_att("units", units, v);
        if (grid->corners > 0) {
          f.put_att("bounds", bounds, v);
          f.def_var(bounds, detail::NcFile::kDouble, bd);
        }
      }
    }
    for (const std::string& n : names) {
      std::vector<int> d{td};
      for (int s : grid ? shared : space_dims(f, n, global, dims)) d.push_back(s);
      const int v = f.def_var(n, detail::NcFile::kDouble, d);
      f.put_att("long_name", "coupling field " + n, v);
      if (coords) f.put_att("coordinates", "lon lat", v);
      if (masked) {
        f.put_att("_FillValue", kCouplerFillValue, v);
        f.put_att("missing_value", kCouplerFillValue, v);
      }
    }
    f.put_att("Conventions", "CF-1.8");
    f.put_att("title", "coupling fields " + join_names(names) + " (EXPOUT/OUTPUT)");
    f.put_att("source", "estuary coupler");
    f.put_att("history", utc_timestamp() + " estuary coupler: written");
    f.enddef();
    if (coords) {
      f.put(f.var("lon"), grid->lon.data());
      f.put(f.var("lat"), grid->lat.data());
      if (grid->corners > 0) {  // OASIS's corner-slowest order to CF's corner-fastest
        std::vector<double> lo(grid->clo.size()), la(grid->cla.size());
        const auto nc = static_cast<std::size_t>(grid->corners), g = static_cast<std::size_t>(global);
        for (std::size_t p = 0; p < g; ++p)
          for (std::size_t c = 0; c < nc; ++c) {
            lo[p * nc + c] = grid->clo[c * g + p];
            la[p * nc + c] = grid->cla[c * g + p];
          }
        f.put(f.var("lon_bnds"), lo.data());
        f.put(f.var("lat_bnds"), la.data());
      }
    }
  }
  NcFile f = NcFile::open(path, true);
  const int tv = f.var("time");
  const auto rec = static_cast<std::size_t>(f.dim_len("time"));
  const std::size_t one = 1;
  f.put(tv, &rec, &one, &t);
  std::vector<double> record;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const int v = f.var(names[k]);
    std::vector<std::size_t> start{rec}, count{1};
    if (grid2d(dims, global)) {
      start.insert(start.end(), {0, 0});
      count.insert(count.end(), {static_cast<std::size_t>(dims[1]), static_cast<std::size_t>(dims[0])});
    } else {
      start.push_back(0);
      count.push_back(static_cast<std::size_t>(global));
    }
    const double* data = values.data() + k * static_cast<std::size_t>(global);
    if (masked) {  // masked points: the fill value, whatever the model put there
      record.assign(data, data + global);
      for (std::size_t p = 0; p < record.size(); ++p)
        if (grid->masked[p] != 0) record[p] = kCouplerFillValue;
      data = record.data();
    }
    f.put(v, start.data(), count.data(), data);
  }
}

void read_records(const std::string& path, const std::vector<std::string>& names, double t,
                  std::vector<double>& values, i64 global) {
  NcFile f = NcFile::open(path);
  const int tv = f.var("time");
  const i64 nt = f.dim_len("time");
  std::vector<double> times(static_cast<std::size_t>(nt));
  if (nt > 0) f.get(tv, times.data());
  i64 rec = -1;
  for (i64 i = 0; i < nt && rec < 0; ++i)
    if (times[static_cast<std::size_t>(i)] == t) rec = i;
  if (rec < 0)
    throw Error("no record for model time " + std::to_string(t) + " s", "file " + path + ", variable time",
                "the INPUT file must hold a record at every coupling time");
  values.resize(names.size() * static_cast<std::size_t>(global));
  for (std::size_t k = 0; k < names.size(); ++k) {
    const int v = f.var(names[k]);
    const std::vector<i64> shape = f.var_shape(v);
    i64 n = 1;
    for (std::size_t d = 1; d < shape.size(); ++d)
      n = checked_mul(n, shape[d], "the size of a record", "file " + path + ", variable " + names[k]);
    if (n != global)
      throw Error("holds " + std::to_string(n) + " points per record, the field " + std::to_string(global),
                  "file " + path + ", variable " + names[k]);
    std::vector<std::size_t> start(shape.size(), 0), count(shape.begin(), shape.end());
    start[0] = static_cast<std::size_t>(rec);
    count[0] = 1;
    f.get(v, start.data(), count.data(), values.data() + k * static_cast<std::size_t>(global));
  }
}

void write_restart(const std::string& path, const std::vector<RestartVar>& vars) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    i64 largest = 0;
    for (const RestartVar& v : vars) largest = std::max(largest, static_cast<i64>(v.values.size()));
    NcFile f = NcFile::create(tmp, largest > (i64{1} << 28));
    std::vector<int> ids;
    for (const RestartVar& v : vars) ids.push_back(f.def_var(v.name, detail::NcFile::kDouble, space_dims(f, v.name, static_cast<i64>(v.values.size()), v.dims)));
    f.put_att("source", "estuary coupler restart");
    f.enddef();
    for (std::size_t k = 0; k < vars.size(); ++k)
      f.put(ids[k], vars[k].values.data());
    f.close();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot rename " + tmp + ": " + ec.message(), "restart file " + path);
}

bool read_restart_var(const std::string& path, const std::string& name, i64 count, std::vector<double>& out) {
  if (!std::filesystem::exists(path)) return false;
  NcFile f = NcFile::open(path);
  const int v = f.find_var(name);
  if (v < 0) return false;
  i64 n = 1;
  for (i64 d : f.var_shape(v)) n = checked_mul(n, d, "the size", "restart file " + path + ", variable " + name);
  if (n != count)
    throw Error("holds " + std::to_string(n) + " values, the coupling needs " + std::to_string(count),
                "restart file " + path + ", variable " + name,
                "a restart belongs to the grid it was written for; remove it to start afresh");
  out.resize(static_cast<std::size_t>(count));
  f.get(v, out.data());
  return true;
}

}  // namespace estuary::detail
