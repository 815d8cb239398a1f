// netCDF files of the coupler through the I/O layer (see couple_io.hpp).
#include "couple/couple_io.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/grid_files.hpp"
#include "estuary/io.hpp"

namespace estuary::detail {

namespace {
using i64 = std::int64_t;

bool grid2d(const std::vector<i64>& dims, i64 global) {
  return dims.size() == 2 && dims[0] * dims[1] == global;
}
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}
i64 g_buffer_peak = 0;
void meter(i64 values) { g_buffer_peak = std::max(g_buffer_peak, values); }

int size_of(MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  return p;
}

// The I/O layer's configuration of one file at `path`: the layer names files "<name>.nc" in
// its directory. Every rank of the communicator writes a slab (D = its size): a rank then holds
// its own points and 1/D of the file, never the whole field, which one writer (the layer's
// default) would. CDF-5, the classic family the coupler wrote before, through PnetCDF; netCDF-4
// (parallel, or the writers in turn) in a build without PnetCDF.
io::OutputConfig file_config(const std::string& path, MPI_Comm comm) {
  const std::filesystem::path p(path);
  io::OutputConfig c;
  c.mode = io::Mode::serverless;
  c.writers = size_of(comm);
  c.directory = p.has_parent_path() ? p.parent_path().string() : ".";
  c.format = io::have_pnetcdf() || c.writers == 1 ? io::Format::cdf5 : io::Format::netcdf4;
  c.catch_sigterm = false;  // the model's own, not the coupler's
  c.source = path;
  io::FileConfig f;
  f.name = p.extension() == ".nc" ? p.stem().string() : p.filename().string();
  f.format = c.format;
  c.files.push_back(f);
  return c;
}

io::FieldConfig field_config(const std::string& name, io::Operation op, bool fill) {
  io::FieldConfig f;
  f.name = name;
  f.operation = op;
  f.precision = io::Precision::f64;
  f.fill_value = fill;
  return f;
}

// This rank's points of the grid of `file` when the run folder's grids.nc holds it with
// mine.global_size() points (nullopt otherwise: no coordinates); `masked` says whether masks.nc
// holds its mask. Read with the grid part's reader: each rank reads the rows of its points.
std::optional<Grid> file_grid(const RecordFile& file, const Decomp& mine, MPI_Comm side, bool& masked) {
  const OasisGridFiles files = OasisGridFiles::in(file.directory);
  int found[2] = {0, 0};  // decided by rank 0 from the headers, so that every rank reads alike
  int r = 0;
  MPI_Comm_rank(side, &r);
  if (r == 0 && !file.grid.empty() && std::filesystem::exists(files.grids)) {
    try {
      const std::vector<std::string> names = oasis_grid_names(files.grids);
      if (std::find(names.begin(), names.end(), file.grid) != names.end()) {
        const GridFileInfo info = grid_file_info(files.grids, file.grid);
        found[0] = info.size == mine.global_size() ? 1 : 0;
        found[1] = info.mask ? 1 : 0;
      }
    } catch (const Error&) {
      found[0] = 0;  // a grid file another tool wrote that does not read: no coordinates
    }
  }
  check_mpi(MPI_Bcast(found, 2, MPI_INT, 0, side), "MPI_Bcast");
  masked = found[0] && found[1];
  if (!found[0]) return std::nullopt;
  GridFileNeeds needs;
  needs.context = "the coupler's file of grid " + file.grid;
  return read_oasis_grid(files, file.grid, mine, side, needs);
}

}  // namespace

i64 coupler_file_buffer_peak() { return g_buffer_peak; }
void reset_coupler_file_buffer_peak() { g_buffer_peak = 0; }

RecordWriter::RecordWriter(const std::string& path, const std::vector<std::string>& names, const Decomp& mine,
                           const std::vector<i64>& dims, const RecordFile& file, MPI_Comm side)
    : names_(names), n_(mine.size()) {
  const i64 global = mine.global_size();
  bool masked = false;
  std::optional<Grid> grid = file_grid(file, mine, side, masked);
  // A grid whose mask is in masks.nc but whose coordinates are in no grids.nc: the mask alone,
  // on each field, so that masked points are still written as _FillValue.
  std::vector<std::int32_t> mask_only;
  if (!grid && !file.grid.empty()) {
    try {
      mask_only = read_oasis_mask(OasisGridFiles::in(file.directory), file.grid, mine, side);
    } catch (const Error&) {  // (agreed: every rank alike) one of another size is not this grid's
      mask_only.clear();
    }
    masked = !mask_only.empty();
    int any = masked ? 1 : 0;  // a rank with no points reads nothing: agree on the attribute
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, side), "MPI_Allreduce");
    masked = any != 0;
  }
  io::OutputConfig c = file_config(path, side);
  c.calendar = file.calendar;
  c.reference_time = file.start_date.empty() ? kDefaultStartDate : file.start_date;
  if (file.start_date.empty())
    c.time_comment = "the configuration gives no start date (YAML start_date, namcouple $INIDATE): times count from " +
                     std::string(kDefaultStartDate) + ", estuary's default";
  c.title = "coupling fields " + join_names(names) + " (EXPOUT/OUTPUT)";
  c.source_attribute = "estuary coupler";
  for (const std::string& n : names) {
    io::FieldConfig f = field_config(n, io::Operation::instant, masked);
    f.long_name = "coupling field " + n;
    c.files[0].fields.push_back(f);
  }
  out_ = std::make_unique<io::Output>(c, side);
  const std::string gname = file.grid.empty() ? "grid" : file.grid;
  const std::vector<i64> shape = grid2d(dims, global) ? dims : std::vector<i64>{global};
  if (grid) {
    // The file's shape is the coupling's (its nx, ny), whatever the grid file's dims say.
    grid->kind = shape.size() == 2 ? GridKind::curvilinear : GridKind::unstructured;
    grid->dims = shape;
    if (!masked) grid->mask.clear();
    out_->def_grid(gname, *grid);
  } else {
    out_->def_grid(gname, shape);
  }
  for (const std::string& n : names) {
    io::FieldDef d;
    d.name = n;
    d.grid = gname;
    d.decomp = mine;
    d.long_name = "coupling field " + n;
    d.mask = mask_only;
    out_->def_field(d);
  }
  out_->end_def();
  meter(std::max(n_, out_->stats().largest_slab));
}

RecordWriter::~RecordWriter() = default;

void RecordWriter::append(double t, std::span<const double> values) {
  for (std::size_t k = 0; k < names_.size(); ++k)
    out_->write(names_[k], t, values.subspan(k * static_cast<std::size_t>(n_), static_cast<std::size_t>(n_)));
}

void RecordWriter::close() { out_->close(); }

void read_records(const std::string& path, const std::vector<std::string>& names, double t, const Decomp& decomp,
                  std::span<double> values, MPI_Comm comm) {
  io::Reader r(path, comm);
  const auto n = static_cast<std::size_t>(decomp.size());
  for (std::size_t k = 0; k < names.size(); ++k) r.read(names[k], t, decomp, values.subspan(k * n, n));
  meter(std::max(decomp.size(), r.largest_slab()));
}

void write_restart(const std::string& path, const std::vector<RestartVar>& vars, MPI_Comm comm) {
  io::OutputConfig c = file_config(path, comm);
  c.title = "estuary coupler restart";
  c.source_attribute = "estuary coupler restart";
  for (const RestartVar& v : vars) c.files[0].fields.push_back(field_config(v.name, io::Operation::once, false));
  // One grid a shape: a coupling's grid name for its arrays, "points<n>" for 1-D ones.
  std::map<std::pair<std::string, std::vector<i64>>, std::string> grids;
  std::vector<std::string> grid_of;
  for (const RestartVar& v : vars) {
    const i64 g = v.decomp.global_size();
    const std::vector<i64> shape = grid2d(v.dims, g) ? v.dims : std::vector<i64>{g};
    const std::string base = shape.size() == 2 && !v.grid.empty() ? v.grid : "points" + std::to_string(g);
    auto [it, added] = grids.try_emplace({base, shape}, base);
    if (added)
      for (const auto& [key, name] : grids)
        if (name == base && key.second != shape) it->second = base + "_" + std::to_string(g);
    grid_of.push_back(it->second);
  }
  io::Output out(c, comm);
  for (const auto& [key, name] : grids) out.def_grid(name, key.second);
  for (std::size_t k = 0; k < vars.size(); ++k) {
    io::FieldDef d;
    d.name = vars[k].name;
    d.grid = grid_of[k];
    d.decomp = vars[k].decomp;
    out.def_field(d);
  }
  out.end_def();
  for (const RestartVar& v : vars) {
    out.write(v.name, 0, v.values);
    meter(v.decomp.size());
  }
  meter(out.stats().largest_slab);
  out.close();
}

struct RestartReader::Impl {
  std::string path;
  std::optional<io::Reader> reader;
};

RestartReader::RestartReader(const std::string& path, MPI_Comm comm) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  int r = 0, exists = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) exists = !path.empty() && std::filesystem::exists(path) ? 1 : 0;
  check_mpi(MPI_Bcast(&exists, 1, MPI_INT, 0, comm), "MPI_Bcast");
  if (exists) impl_->reader.emplace(path, comm);
}

RestartReader::~RestartReader() = default;

bool RestartReader::exists() const { return impl_->reader.has_value(); }

bool RestartReader::read(const std::string& name, const Decomp& decomp, std::span<double> out) {
  if (!impl_->reader) return false;
  const i64 n = impl_->reader->points(name);  // from the header: the same on every rank
  if (n < 0) return false;
  if (n != decomp.global_size())
    throw Error("holds " + std::to_string(n) + " values, the coupling needs " + std::to_string(decomp.global_size()),
                "restart file " + impl_->path + ", variable " + name,
                "a restart belongs to the grid it was written for; remove it to start afresh");
  impl_->reader->read_record(name, -1, decomp, out);
  meter(std::max(decomp.size(), impl_->reader->largest_slab()));
  return true;
}

}  // namespace estuary::detail
