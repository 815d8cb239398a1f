// Output: temporal operations on the model side, remap-and-write to D writers, CF files.
//
// Both modes share one structure: a "transfer communicator" (xcomm) holding the model ranks and
// the writers, one Redist per source decomposition from the model layout to contiguous slabs of
// the file's global array on the writers, and the same file code on the writers. They differ
// only in who drives the writers: in serverless mode the model ranks themselves, synchronously;
// in server mode a loop on the dedicated ranks that follows control messages from model rank 0.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "common/mpi_util.hpp"
#include "common/time_accumulator.hpp"
#include "estuary/io.hpp"
#include "estuary/redist.hpp"
#include "io/io_detail.hpp"

namespace estuary::io {

using detail::Box;
using detail::FileWriter;
using detail::i64;

namespace {

// The temporal operations are the time accumulator's (common/time_accumulator.hpp), which the
// coupler's LOCTRANS uses too. (once takes one sample and accumulates nothing.)
estuary::detail::TimeOp time_op(Operation op) {
  switch (op) {
    case Operation::average: return estuary::detail::TimeOp::average;
    case Operation::accumulate: return estuary::detail::TimeOp::sum;
    case Operation::minimum: return estuary::detail::TimeOp::minimum;
    case Operation::maximum: return estuary::detail::TimeOp::maximum;
    case Operation::instant:
    case Operation::once: return estuary::detail::TimeOp::instant;
  }
  return estuary::detail::TimeOp::instant;
}

// Set by the SIGTERM handler; read at output steps (the only async-signal-safe hand-over).
volatile std::sig_atomic_t g_sigterm = 0;
extern "C" void on_sigterm(int) { g_sigterm = 1; }

enum CtrlKind : int { kRecord = 1, kFlush = 2, kClose = 3 };
// kTagError: the servers' first write error, text sent once by the first server to model rank 0.
constexpr int kTagCatalog = 1, kTagCtrl = 2, kTagAck = 3, kTagError = 4;

struct Ctrl {
  int kind = 0;
  int var = 0;
  int slot = 0;
  int fault = 0;  // kClose: after a fault (drop incomplete records)
  i64 record = 0;
  double time = 0, tb0 = 0, tb1 = 0;
};

// A small byte stream for the catalog the model sends to the servers.
struct Packer {
  std::vector<char> b;
  void i(i64 v) { raw(&v, sizeof v); }
  void d(double v) { raw(&v, sizeof v); }
  void s(const std::string& v) { i(static_cast<i64>(v.size())); raw(v.data(), v.size()); }
  void vi(const std::vector<i64>& v) { i(static_cast<i64>(v.size())); for (i64 x : v) i(x); }
  void vd(const std::vector<double>& v) { i(static_cast<i64>(v.size())); for (double x : v) d(x); }
  void raw(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    b.insert(b.end(), c, c + n);
  }
};
struct Unpacker {
  const std::vector<char>& b;
  std::size_t at = 0;
  i64 i() { i64 v; get(&v, sizeof v); return v; }
  double d() { double v; get(&v, sizeof v); return v; }
  std::string s() { std::string v(static_cast<std::size_t>(i()), '\0'); get(v.data(), v.size()); return v; }
  std::vector<i64> vi() { std::vector<i64> v(static_cast<std::size_t>(i())); for (auto& x : v) x = i(); return v; }
  std::vector<double> vd() { std::vector<double> v(static_cast<std::size_t>(i())); for (auto& x : v) x = d(); return v; }
  void get(void* p, std::size_t n) {
    if (at + n > b.size()) throw Error("truncated catalog message", "I/O server");
    std::memcpy(p, b.data() + at, n);
    at += n;
  }
};

// Every setting of `c` that shapes the ranks' collectives, as text (for agree_same).
// The line this run adds to a file's `history` (CF): when and by what it was written.
std::string history_line() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return std::string(date) + " estuary " ESTUARY_VERSION_STRING ": written by estuary::io::Output";
}

std::string describe(const OutputConfig& c) {
  std::ostringstream o;
  o.precision(17);
  o << static_cast<int>(c.mode) << ' ' << c.writers << ' ' << c.buffer_records << ' ' << c.directory << '\n'
    << c.calendar << ' ' << c.reference_time << ' ' << static_cast<int>(c.format) << ' ' << c.catch_sigterm << '\n';
  for (const FileConfig& f : c.files) {
    o << f.name << ' ' << f.output_freq.seconds << '/' << f.output_freq.months << ' ' << f.restart << ' '
      << f.split_freq.seconds << '/' << f.split_freq.months << ' '
      << static_cast<int>(f.format) << ':';
    for (const FieldConfig& x : f.fields)
      o << ' ' << x.name << '/' << static_cast<int>(x.operation) << '/' << static_cast<int>(x.precision) << '/'
        << x.deflate << '/' << x.sampling_freq_s << '/' << static_cast<int>(x.quantize) << '/' << x.significant << '/'
        << x.zstd;
    o << '\n';
  }
  return o.str();
}

const char* coord_name(int kind) {
  static const char* n[] = {"lon", "lat", "lon_bnds", "lat_bnds"};
  return n[kind];
}

}  // namespace

struct GridInfo {
  std::string name;
  GridKind kind = GridKind::unstructured;
  std::vector<i64> dims;
  i64 global_size = 0;
  int ncorner = 0;
  // Model side only: this rank's points and their coordinates.
  std::vector<i64> points;
  std::vector<double> lon, lat, clon, clat;
  std::vector<std::int32_t> mask;  // per point of `points`; empty: none masked
  // Regular lon-lat and Gaussian grids: longitude constant along each column and latitude along
  // each row, written as 1-D coordinate variables lon(lon), lat(lat) with their bounds (CF,
  // what CDO and xarray's sel(lat=...) expect). Known on every rank (model ranks reduce them,
  // servers get them in the catalog).
  bool rectilinear = false;
  std::vector<double> axis_lon, axis_lat, axis_lon_bnds, axis_lat_bnds;  // nx, ny, 2 nx, 2 ny
  // File shape of the horizontal grid: {ny, nx} for 2-D kinds, {n} otherwise.
  std::vector<i64> hshape() const {
    if (dims.size() == 2 && kind != GridKind::reduced_gaussian && kind != GridKind::unstructured)
      return {dims[1], dims[0]};
    return {global_size};
  }
};

struct FieldInfo {
  FieldDef def;
  int grid = -1;
  std::vector<std::size_t> masked;  // model side: local values written as the fill value
};

// One Redist from a source decomposition to the writers' slabs, shared by every variable fed
// from that source (a field in several files, a grid's coordinates in several files).
struct Transfer {
  std::unique_ptr<Redist> redist;
  std::vector<Exchange> slots;  // server mode: the bounded client buffer, one record each
  std::vector<bool> busy;
  i64 next_slot = 0;
  i64 n = 0, local_n = 0;       // global size, model-side local size
  i64 lo = 0, hi = 0;           // this writer's slab
  std::vector<double> slab;
};

struct Var {
  int file = 0;
  std::string name;
  int field = -1;               // FieldInfo index, or -1 for a coordinate
  int grid = -1, coord = -1;    // coordinates: grid index and kind (0 lon, 1 lat, 2/3 bounds)
  std::string standard_name, long_name, units;  // fields: from the file's config, else the FieldDef
  int transfer = -1;
  std::vector<i64> shape;       // without time
  std::vector<std::string> dim_names;
  bool has_time = false, dbl = true;
  Operation op = Operation::once;
  int ncvar = -1;
  std::vector<Box> boxes;       // this writer's part of its slab
  // Model side: the temporal operation's state.
  std::vector<double> acc;
  i64 nsamples = 0;
  double next_out = std::numeric_limits<double>::quiet_NaN();  // end of the current period
  i64 next_k = 0;                                              // its boundary's index
  bool done_once = false;
  i64 record = 0;
  int deflate = 0;
  FieldConfig::Quantize quantize = FieldConfig::Quantize::none;
  int significant = 0, zstd = 0;
  double sampling_s = 0;
  // Writers, split files: coordinates and `once` fields, written into every split file.
  std::vector<double> keep;
  bool kept = false;
};

struct FileState {
  FileConfig cfg;
  std::string path, final_path;
  std::unique_ptr<FileWriter> w;
  bool has_time = false, has_bounds = false;
  int time_var = -1, tb_var = -1;
  std::vector<std::pair<int, std::string>> axes1d;  // rectilinear grids used: (grid, name suffix)
  i64 time_written = -1;
  i64 split = std::numeric_limits<i64>::min();  // the split period of the open file
  i64 rec_base = 0;                              // the first record of the open split file
  // Atomic records: a record's slabs wait here until every time-varying variable of the file
  // has delivered it; only then is the record written and its count committed to the file.
  struct Pending {
    double time = 0, tb0 = 0, tb1 = 0;
    std::map<int, std::vector<double>> slabs;  // by Var index
  };
  std::map<i64, Pending> pending;  // by record (of the whole run, before splitting)
  int time_vars = 0;               // variables with a time dimension
  i64 committed = 0;               // records of the open file complete on disk
};

struct Output::Impl {
  OutputConfig cfg;
  std::vector<double> masked_copy;  // model side: a written field with its masked points filled
  CalendarClock clock;  // period boundaries of cfg's calendar
  bool server_mode = false;
  bool model = true, writer = false, server = false;
  MPI_Comm model_comm = MPI_COMM_NULL, xcomm = MPI_COMM_NULL, ctrl = MPI_COMM_NULL,
           wcomm = MPI_COMM_NULL;
  int xrank = 0, xsize = 1, windex = -1, nwriters = 1, model_rank = 0;
  std::vector<int> server_xranks;  // server mode: xcomm ranks of the servers
  std::vector<GridInfo> grids;
  std::vector<FieldInfo> fields;
  std::map<std::string, std::vector<int>> vars_of_field;
  std::vector<Transfer> transfers;
  std::vector<Var> vars;
  std::vector<FileState> files;
  bool defined = false, closed = false;
  // Model ranks: the output's failure, the same text on every rank once agreed; every later
  // call throws it again. Servers: their first (agreed) write error. Model rank 0: the text a
  // server sent, until the next agreement point hands it to every model rank.
  std::string failure, server_error;
  std::string error_sent;  // server 0: the text of its pending error message
  MPI_Request error_request = MPI_REQUEST_NULL;
  IoStats stats;
  struct sigaction old_action {};
  bool handler_installed = false;

  std::string where_rank() const { return estuary::detail::world_rank_label(); }

  // ---- set-up ----

  std::vector<char> pack_catalog() const {
    Packer p;
    p.i(static_cast<i64>(grids.size()));
    for (const GridInfo& g : grids) {
      p.s(g.name);
      p.i(static_cast<i64>(g.kind));
      p.vi(g.dims);
      p.i(g.global_size);
      p.i(g.ncorner);
      p.i(g.rectilinear ? 1 : 0);
      p.vd(g.axis_lon);
      p.vd(g.axis_lat);
      p.vd(g.axis_lon_bnds);
      p.vd(g.axis_lat_bnds);
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

  void unpack_catalog(const std::vector<char>& b) {
    Unpacker u{b};
    grids.resize(static_cast<std::size_t>(u.i()));
    for (GridInfo& g : grids) {
      g.name = u.s();
      g.kind = static_cast<GridKind>(u.i());
      g.dims = u.vi();
      g.global_size = u.i();
      g.ncorner = static_cast<int>(u.i());
      g.rectilinear = u.i() != 0;
      g.axis_lon = u.vd();
      g.axis_lat = u.vd();
      g.axis_lon_bnds = u.vd();
      g.axis_lat_bnds = u.vd();
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

  // Model side, collective over the model ranks, before the catalog: the 1-D axes of lon-lat and
  // Gaussian grids. Each rank puts its points' longitudes at their column and latitudes at their
  // row; the max and min over ranks must agree (a grid that is not rectilinear after all, or one
  // whose points no rank holds, keeps 2-D coordinates). Bounds come from the corners: the cell's
  // extent in longitude around its centre (across the date line too) and in latitude.
  void compute_axes() {
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

  // Model side, after plan_vars: the local values of each field that are written as the fill
  // value, from the field's own mask or its grid's (through this rank's part of the grid).
  void resolve_masks() {
    for (FieldInfo& f : fields) {
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
  }

  // Variables of every file, in an order every rank derives from the config and the catalog.
  void plan_vars() {
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
      std::vector<std::vector<double>> axes;
      for (std::size_t k = 0; k < fc.fields.size(); ++k) {
        const FieldConfig& fd = fc.fields[k];
        auto it = std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& f) { return f.def.name == fd.name; });
        if (it == fields.end())
          throw Error("field '" + fd.name + "' is not declared by the model",
                      "config " + cfg.source + ", file " + fc.name + ", key fields[" + std::to_string(k) + "].name",
                      "declare it with def_field or remove it from the file");
        if (std::find(used_grids.begin(), used_grids.end(), it->grid) == used_grids.end())
          used_grids.push_back(it->grid);
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
      for (const FieldConfig& fd : fc.fields) {
        const int f = static_cast<int>(std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& x) {
                                         return x.def.name == fd.name;
                                       }) - fields.begin());
        const FieldInfo& info = fields[static_cast<std::size_t>(f)];
        Var v;
        v.file = static_cast<int>(fi);
        v.name = fd.name;
        v.field = f;
        v.transfer = f;
        v.op = fd.operation;
        v.dbl = fd.precision == Precision::f64;
        v.deflate = fd.deflate;
        v.quantize = fd.quantize;
        v.significant = fd.significant;
        v.zstd = fd.zstd;
        v.sampling_s = fd.sampling_freq_s;
        v.has_time = fd.operation != Operation::once;
        v.standard_name = fd.standard_name.empty() ? info.def.standard_name : fd.standard_name;
        v.long_name = fd.long_name.empty() ? info.def.long_name : fd.long_name;
        v.units = fd.units.empty() ? info.def.units : fd.units;
        if (!info.def.levels.empty()) {
          auto a = std::find(axes.begin(), axes.end(), info.def.levels);
          const std::size_t ai = static_cast<std::size_t>(a - axes.begin());
          if (a == axes.end()) axes.push_back(info.def.levels);
          v.shape.push_back(static_cast<i64>(info.def.levels.size()));
          v.dim_names.push_back(ai == 0 ? "lev" : "lev" + std::to_string(ai + 1));
        }
        for (i64 s : grids[static_cast<std::size_t>(info.grid)].hshape()) v.shape.push_back(s);
        for (const auto& d : hdims[info.grid]) v.dim_names.push_back(d);
        vars_of_field[fd.name].push_back(static_cast<int>(vars.size()));
        vars.push_back(std::move(v));
      }
      files.push_back(std::move(fs));
    }
  }

  // The model-side source decomposition of transfer t.
  Decomp source_of(std::size_t t) const {
    if (!model) return Decomp::empty(transfers[t].n);
    if (t < fields.size()) return fields[t].def.decomp;
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

  void build_transfers() {
    RedistOptions opt;
    // One stage of point-to-point messages: start() packs everything and posts the sends, so
    // a model rank's buffer is free when start() returns (the bounded client buffer).
    opt.algorithm = "p2p";
    for (std::size_t t = 0; t < transfers.size(); ++t) {
      Transfer& tr = transfers[t];
      if (writer) std::tie(tr.lo, tr.hi) = detail::slab_range(tr.n, nwriters, windex);
      const Decomp dst = writer ? Decomp::stripes(tr.n, {{tr.lo, tr.hi - tr.lo, 1}}) : Decomp::empty(tr.n);
      const Decomp src = source_of(t);
      tr.local_n = src.size();
      try {
        tr.redist = std::make_unique<Redist>(src, dst, xcomm, opt);
      } catch (const Error& e) {
        const std::string what = t < fields.size() ? "field " + fields[t].def.name : "grid coordinates";
        throw Error(e.fault(), what + ", " + e.where(), e.fix());
      }
      tr.slab.assign(static_cast<std::size_t>(tr.hi - tr.lo), 0.0);
      if (server_mode)
        for (int k = 0; k < cfg.buffer_records; ++k) {
          tr.slots.push_back(tr.redist->make_exchange({Type::f64}));
          tr.busy.push_back(false);
        }
    }
  }

  void create_files() {
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

  // Creates and defines one file, then writes what every file of `fs` holds: level axes, and
  // for split files the kept coordinates and `once` fields.
  void open_file(FileState& fs, const std::string& path) {
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
      for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"title", &cfg.title},
                                       {"institution", &cfg.institution}, {"source", &cfg.source_attribute},
                                       {"comment", &cfg.comment}})
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
              axes.push_back({v.dim_names[k], fields[static_cast<std::size_t>(v.field)].def.levels});
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
        if (fs.has_bounds) {
          w.put_att(fs.time_var, "bounds", "time_bnds");
          fs.tb_var = w.def_var("time_bnds", true, {tdim, nvdim});
          w.put_att(fs.tb_var, "units", tunits);
          w.put_att(fs.tb_var, "calendar", cfg.calendar);
        }
      }
      std::vector<int> axis_vars;
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const int av = w.def_var(axes[a].first, true, {dims[axes[a].first]});
        // CF's vertical coordinate: depth in metres (ocean), pressure (atmosphere), else levels.
        const std::string& u = axis_units[a];
        const bool pressure = u == "Pa" || u == "hPa";
        w.put_att(av, "standard_name", u == "m" ? "depth" : pressure ? "air_pressure" : "model_level_number");
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
            const int bv = w.def_var(b, true, {dims[name], nvdim});
            w.put_att(bv, "units", lon ? "degrees_east" : "degrees_north");
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
          } else {
            w.put_att(v.ncvar, "units", is_lon ? "degrees_east" : "degrees_north");
          }
          continue;
        }
        const FieldInfo& f = fields[static_cast<std::size_t>(v.field)];
        if (!v.standard_name.empty()) w.put_att(v.ncvar, "standard_name", v.standard_name);
        if (!v.long_name.empty()) w.put_att(v.ncvar, "long_name", v.long_name);
        if (!v.units.empty()) w.put_att(v.ncvar, "units", v.units);
        // Masked points and periods without a sample: CF's fill value, in the variable's type.
        w.put_att(v.ncvar, "_FillValue", {kFillValue}, !v.dbl);
        w.put_att(v.ncvar, "missing_value", {kFillValue}, !v.dbl);
        // The horizontal coordinate variables of this field's grid, named after its dimensions
        // (1-D coordinate variables of a rectilinear grid need no attribute: they share its dims).
        std::string sfx = v.dim_names.back();
        sfx = sfx.substr(sfx.find('_') == std::string::npos ? sfx.size() : sfx.find('_'));
        if (!grids[static_cast<std::size_t>(f.grid)].rectilinear) w.put_att(v.ncvar, "coordinates", "lon" + sfx + " lat" + sfx);
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

  void put_slab(FileState& fs, Var& v, i64 record, const double* data) {
    const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    fs.w->put(v.ncvar, record, v.boxes, data);
    stats.bytes_written += (tr.hi - tr.lo) * (v.dbl ? 8 : 4);
  }

  // Writers: the slab of `v`'s transfer is in place. Variables without time are written at
  // once; a time record waits in its file's pending set until it is complete (atomic records).
  void write_record(Var& v, i64 record, double time, double tb0, double tb1) {
    const double t0 = MPI_Wtime();
    FileState& fs = files[static_cast<std::size_t>(v.file)];
    const Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    if (!v.has_time) {
      if (fs.cfg.split_freq) {
        // Coordinates and `once` fields go into every split file: kept for the next ones.
        v.keep = tr.slab;
        v.kept = true;
        if (fs.w) put_named(fs, v, -1, v.keep.data());
      } else {
        put_named(fs, v, -1, tr.slab.data());
        stats.records_written += 1;
      }
      stats.write_s += MPI_Wtime() - t0;
      return;
    }
    FileState::Pending& p = fs.pending[record];
    p.time = time;
    p.tb0 = tb0;
    p.tb1 = tb1;
    p.slabs[static_cast<int>(&v - vars.data())] = tr.slab;
    // A record is written once complete, or once a later one arrived: then the missing
    // variables were not written at that step by the model (they keep the fill value).
    while (!fs.pending.empty() &&
           (static_cast<int>(fs.pending.begin()->second.slabs.size()) == fs.time_vars || fs.pending.size() > 1))
      commit_record(fs);
    stats.write_s += MPI_Wtime() - t0;
  }

  // Writes the oldest pending record of fs whole (time, bounds, variables), then commits the
  // record count so that the file shows it only now. Collective over the writers.
  void commit_record(FileState& fs) {
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
    on_writers([&] { w.prepare_record(record); });
    stats.commit_s += MPI_Wtime() - t0;
    // The variables first, the time last: a netCDF-4 file, whose record dimension cannot shrink,
    // shows a record a failed write left incomplete with a missing (fill-value) time.
    for (auto& [vi, slab] : p.slabs) {
      put_named(fs, vars[static_cast<std::size_t>(vi)], record, slab.data());
      stats.records_written += 1;
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

  // put_slab with the variable's name and record added to any error, which every writer
  // throws alike (a write that failed on one writer must not leave the others in the next
  // collective call).
  void put_named(FileState& fs, Var& v, i64 record, const double* data) {
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

  // Runs a step of the writers' collective file work; an error on any writer is every writer's.
  void on_writers(const std::function<void()>& step) { estuary::detail::agree(wcomm, step); }

  // Closes every file. A normal close writes the records still pending (a variable the model
  // did not write at the last step keeps the fill value there). After a fault (an error,
  // SIGTERM, an exception unwinding) the incomplete records are dropped, and a classic file's
  // record count is set back to the records completed, so no half-written record shows.
  void close_files(bool fault) {
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

  void sync_files() {
    if (!writer) return;
    std::lock_guard<std::recursive_mutex> lock(detail::nc_lock());
    for (FileState& fs : files)
      if (fs.w) on_writers([&] { fs.w->sync(); });
  }

  // Model ranks: runs a step whose failure (on any rank of xcomm, agreed) fails the output.
  void or_fail(const std::function<void()>& step) {
    try {
      estuary::detail::agree(xcomm, step);
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
      throw;
    }
  }

  // Throws the output's earlier failure again: nothing more is written after an error.
  void check_not_failed(const std::string& call) const {
    if (!failure.empty())
      throw Error("the output failed earlier: " + failure, call + " on " + where_rank(),
                  "end the run; the records completed before the failure are in the files");
  }

  // Model ranks: everyone gets rank 0's `text` (empty: no failure).
  std::string share_from_root(std::string text) const {
    int len = static_cast<int>(text.size());
    estuary::detail::check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, model_comm), "MPI_Bcast");
    text.resize(static_cast<std::size_t>(len));
    estuary::detail::check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, 0, model_comm), "MPI_Bcast");
    return text;
  }

  // Model rank 0: takes the servers' error message if it has arrived (block: wait for it).
  void poll_server_error(bool block) {
    if (!server_mode || model_rank != 0 || !server_error.empty()) return;
    int flag = block ? 1 : 0;
    MPI_Status st;
    if (!block) MPI_Iprobe(server_xranks[0], kTagError, ctrl, &flag, &st);
    if (!flag) return;
    if (block) MPI_Probe(server_xranks[0], kTagError, ctrl, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    server_error.assign(static_cast<std::size_t>(n), '\0');
    estuary::detail::check_mpi(
        MPI_Recv(server_error.data(), n, MPI_CHAR, server_xranks[0], kTagError, ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
  }

  // ---- model side ----

  // Hands the values of variable `v` (local layout of its transfer) to the writers.
  void emit(Var& v, const double* values, double time, double tb0, double tb1) {
    Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
    const i64 record = v.has_time ? v.record++ : -1;
    const double t0 = MPI_Wtime();
    if (!server_mode) {
      tr.redist->run({Field(Type::f64, values, tr.local_n, tr.slab.data(), static_cast<i64>(tr.slab.size()))});
      stats.transfer_s += MPI_Wtime() - t0;
      // A writer's failure becomes every rank's error instead of a hang in the next collective.
      or_fail([&] {
        if (writer) write_record(v, record, time, tb0, tb1);
      });
    } else {
      const int slot = static_cast<int>(tr.next_slot++ % static_cast<i64>(tr.slots.size()));
      if (tr.busy[static_cast<std::size_t>(slot)]) tr.slots[static_cast<std::size_t>(slot)].finish();
      tr.slots[static_cast<std::size_t>(slot)].start({Field(Type::f64, values, tr.local_n, nullptr, 0)});
      tr.busy[static_cast<std::size_t>(slot)] = true;
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

  void drain_slots() {
    for (Transfer& tr : transfers)
      for (std::size_t k = 0; k < tr.busy.size(); ++k)
        if (tr.busy[k]) {
          tr.slots[k].finish();
          tr.busy[k] = false;
        }
  }

  // Model root: sends `kind` to every server and waits for each one's acknowledgement (1, or
  // 0 when the servers failed). Returns the servers' error on every model rank ("" if none).
  std::string command_servers(int kind, bool fault = false) {
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

  void write_coordinates() {
    for (Var& v : vars) {
      if (v.coord < 0) continue;
      const GridInfo& g = grids[static_cast<std::size_t>(v.grid)];
      const std::vector<double>* src[] = {&g.lon, &g.lat, &g.clon, &g.clat};
      emit(v, model ? src[v.coord]->data() : nullptr, 0, 0, 0);
      v.done_once = true;
    }
  }

  void install_handler() {
    if (!cfg.catch_sigterm) return;
    g_sigterm = 0;  // a signal handled by an earlier Output was acted upon there
    struct sigaction sa {};
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_action);
    handler_installed = true;
  }
  void restore_handler() {
    if (handler_installed) sigaction(SIGTERM, &old_action, nullptr);
    handler_installed = false;
  }

  // fault: closing after an error, SIGTERM or an exception — incomplete records are dropped.
  // Throws the output's failure unless fault (a destructor or an error path calls it then).
  void do_close(bool fault) {
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

  // ---- server side ----

  // After a write error the servers keep receiving (the model's transfers and commands must
  // complete) but write nothing more; the first server tells model rank 0 at once, every
  // server acknowledges flush and close with 0, and serve() throws the error after close.
  void serve_loop() {
    const int root = 0;  // model rank 0 is xcomm rank 0 (servers are the last ranks)
    auto failed = [&](const std::exception& e) {
      server_error = e.what();
      if (windex != 0) return;
      error_sent = server_error.substr(0, 4000);
      estuary::detail::check_mpi(MPI_Isend(error_sent.data(), static_cast<int>(error_sent.size()), MPI_CHAR, root,
                                           kTagError, ctrl, &error_request),
                                 "MPI_Isend");
    };
    for (;;) {
      Ctrl c;
      estuary::detail::check_mpi(MPI_Recv(&c, sizeof c, MPI_BYTE, root, kTagCtrl, ctrl, MPI_STATUS_IGNORE), "MPI_Recv");
      if (c.kind == kRecord) {
        Var& v = vars[static_cast<std::size_t>(c.var)];
        Transfer& tr = transfers[static_cast<std::size_t>(v.transfer)];
        const double t0 = MPI_Wtime();
        tr.slots[static_cast<std::size_t>(c.slot)].run(
            {Field(Type::f64, nullptr, 0, tr.slab.data(), static_cast<i64>(tr.slab.size()))});
        stats.transfer_s += MPI_Wtime() - t0;
        if (server_error.empty()) {
          try {
            on_writers([&] { write_record(v, c.record, c.time, c.tb0, c.tb1); });
          } catch (const std::exception& e) {
            failed(e);
          }
        }
      } else {
        try {
          if (c.kind == kFlush && server_error.empty()) sync_files();
          if (c.kind == kClose) close_files(c.fault != 0 || !server_error.empty());
        } catch (const std::exception& e) {
          if (server_error.empty()) failed(e);
        }
        const int ack = server_error.empty() ? 1 : 0;
        estuary::detail::check_mpi(MPI_Send(&ack, 1, MPI_INT, root, kTagAck, ctrl), "MPI_Send");
        if (c.kind == kClose) {
          // Model rank 0 receives the error text once it sees a 0 acknowledgement.
          if (error_request != MPI_REQUEST_NULL) MPI_Wait(&error_request, MPI_STATUS_IGNORE);
          return;
        }
      }
    }
  }
};

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
  if (config.writers < 1)
    throw Error("writers must be at least 1", "config " + config.source + ", key output.writers");
  if (!have_pnetcdf() && std::min(config.writers, size) > 1)
    for (const FileConfig& f : config.files)
      if (f.format != Format::netcdf4)
        throw Error("PnetCDF is not built in: file \"" + f.name + "\" in a classic format needs it with " +
                        std::to_string(config.writers) + " writers",
                    "config " + config.source + ", key output.writers",
                    "use writers: 1 or format: netcdf4, or build estuary with PnetCDF (ESTUARY_WITH_PNETCDF)");
  if (x.server_mode) {
    if (config.writers >= size)
      throw Error("server mode with " + std::to_string(config.writers) + " writers needs more than " +
                      std::to_string(size) + " ranks",
                  "config " + config.source + ", key output.writers",
                  "use fewer writers, more ranks, or mode: serverless");
    x.nwriters = config.writers;
    x.server = rank >= size - config.writers;
    x.model = !x.server;
    x.writer = x.server;
    estuary::detail::check_mpi(MPI_Comm_split(comm, x.model ? 0 : 1, rank, &x.model_comm), "MPI_Comm_split");
    if (x.server) {
      MPI_Comm_free(&x.model_comm);
      x.model_comm = MPI_COMM_NULL;
    }
    estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.xcomm), "MPI_Comm_dup");
    for (int s = size - config.writers; s < size; ++s) x.server_xranks.push_back(s);
  } else {
    x.nwriters = std::min(config.writers, size);
    estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.model_comm), "MPI_Comm_dup");
    estuary::detail::check_mpi(MPI_Comm_dup(comm, &x.xcomm), "MPI_Comm_dup");
    // Writers spread over the ranks (w * P / D), so that on several nodes they share the load.
    for (int w = 0; w < x.nwriters; ++w)
      if (static_cast<i64>(w) * size / x.nwriters == rank) x.writer = true;
  }
  MPI_Comm_rank(x.xcomm, &x.xrank);
  MPI_Comm_size(x.xcomm, &x.xsize);
  if (x.model) MPI_Comm_rank(x.model_comm, &x.model_rank);
  estuary::detail::check_mpi(MPI_Comm_dup(x.xcomm, &x.ctrl), "MPI_Comm_dup");
  estuary::detail::check_mpi(MPI_Comm_split(x.xcomm, x.writer ? 0 : MPI_UNDEFINED, x.xrank, &x.wcomm), "MPI_Comm_split");
  if (x.writer) MPI_Comm_rank(x.wcomm, &x.windex);
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

bool Output::is_server() const { return impl_->server; }
MPI_Comm Output::model_comm() const { return impl_->model_comm; }
const IoStats& Output::stats() const { return impl_->stats; }

IoReport Output::report(double run_s, double run_without_io_s) const {
  const Impl& x = *impl_;
  IoReport r;
  r.ranks = x.xsize;
  r.writers = x.nwriters;
  const int is_model = x.model ? 1 : 0;
  MPI_Allreduce(&is_model, &r.model_ranks, 1, MPI_INT, MPI_SUM, x.xcomm);
  const i64 mine[3] = {x.stats.bytes_written, x.stats.records_written, x.writer && x.windex == 0 ? x.stats.files_created : 0};
  i64 sum[3] = {0, 0, 0};
  MPI_Allreduce(mine, sum, 3, MPI_INT64_T, MPI_SUM, x.xcomm);
  r.bytes_written = sum[0];
  r.records_written = sum[1];
  r.files_created = sum[2];
  const double tmine[2] = {x.stats.write_s, x.model ? x.stats.model_io_s : 0.0};
  double tmax[2] = {0, 0};
  MPI_Allreduce(tmine, tmax, 2, MPI_DOUBLE, MPI_MAX, x.xcomm);
  r.write_s = tmax[0];
  r.model_io_s = tmax[1];
  r.write_mb_per_s = r.write_s > 0 ? static_cast<double>(r.bytes_written) / 1e6 / r.write_s : 0;
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
                "\"core_hours\": %.6g, \"data_output_cost\": %.6g, \"data_intensity_gb_per_ch\": %.6g}",
                ranks, model_ranks, writers, static_cast<long long>(bytes_written),
                static_cast<long long>(records_written), static_cast<long long>(files_created), write_s,
                write_mb_per_s, model_io_s, run_s, run_without_io_s, core_hours, data_output_cost, data_intensity);
  return b;
}

void Output::def_grid(const std::string& name, const Grid& local) {
  Impl& x = *impl_;
  if (!x.model || x.defined) throw Error("def_grid outside the definition phase", "grid " + name);
  local.check();
  GridInfo g;
  g.name = name;
  g.kind = local.kind;
  g.dims = local.dims;
  g.global_size = local.global_size;
  g.ncorner = local.ncorner;
  for (i64 i = 0; i < local.size(); ++i) g.points.push_back(local.global_index(i));
  g.lon = local.lon;
  g.lat = local.lat;
  g.clon = local.corner_lon;
  g.clat = local.corner_lat;
  g.mask = local.mask;
  x.grids.push_back(std::move(g));
}

void Output::def_field(const FieldDef& field) {
  Impl& x = *impl_;
  if (!x.model || x.defined) throw Error("def_field outside the definition phase", "field " + field.name);
  for (const FieldInfo& f : x.fields)
    if (f.def.name == field.name) throw Error("field defined twice", "field " + field.name);
  x.fields.push_back({field, -1, {}});
}

void Output::end_def() {
  Impl& x = *impl_;
  const double t0 = MPI_Wtime();
  if (x.model) x.compute_axes();
  if (x.server_mode && x.model_rank == 0 && x.model) {
    const std::vector<char> cat = x.pack_catalog();
    for (int s : x.server_xranks)
      estuary::detail::check_mpi(MPI_Send(cat.data(), static_cast<int>(cat.size()), MPI_BYTE, s, kTagCatalog, x.ctrl),
                        "MPI_Send");
  }
  // Every rank checks the same catalog against the same config: all fail alike, none hangs.
  x.plan_vars();
  estuary::detail::agree(x.xcomm, [&] {
    if (x.model) x.resolve_masks();
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
  x.unpack_catalog(cat);
  x.plan_vars();
  estuary::detail::agree(x.xcomm, [&] {
    if (x.model) x.resolve_masks();
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
  auto it = x.vars_of_field.find(field);
  auto fit = std::find_if(x.fields.begin(), x.fields.end(), [&](const FieldInfo& f) { return f.def.name == field; });
  if (fit == x.fields.end())
    throw Error("write of an undeclared field", "field " + field + ", " + x.where_rank(), "declare it with def_field");
  const i64 n = fit->def.decomp.size();
  if (static_cast<i64>(data.size()) != n)
    throw Error("write of " + std::to_string(data.size()) + " values, the decomposition holds " + std::to_string(n),
                "field " + field + ", " + x.where_rank());
  if (it == x.vars_of_field.end()) return;  // declared but in no file
  std::vector<int> due;
  for (int vi : it->second) {
    Var& v = x.vars[static_cast<std::size_t>(vi)];
    if (v.op == Operation::once) {
      if (!v.done_once) due.push_back(vi);
      continue;
    }
    const Frequency& F = x.files[static_cast<std::size_t>(v.file)].cfg.output_freq;
    // The period a sample belongs to is (boundary next_k - 1, boundary next_k = next_out].
    if (std::isnan(v.next_out)) {
      v.next_k = x.clock.first_boundary_from(F, time);
      v.next_out = x.clock.boundary(F, v.next_k);
    }
    const double eps = 1e-9 * (v.next_out - x.clock.boundary(F, v.next_k - 1));
    const std::size_t un = static_cast<std::size_t>(n);
    // sampling_freq: only samples at its multiples enter the operation (XIOS freq_op).
    bool sample = true;
    if (v.sampling_s > 0) {
      const double q = time / v.sampling_s;
      sample = std::abs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::abs(q));
    }
    if (sample && v.op != Operation::instant) {  // (once is handled above)
      v.acc.resize(un);
      estuary::detail::TimeAccumulator(time_op(v.op)).add(v.acc, data, v.nsamples);
    }
    if (sample) v.nsamples += 1;
    if (time >= v.next_out - eps) due.push_back(vi);
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
  const std::vector<std::size_t>& masked = fit->masked;
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
