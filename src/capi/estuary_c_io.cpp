// The C API (estuary.h), its I/O part (est_io_*): opaque handles over estuary::io, exceptions
// turned into error codes (see estuary_c.cpp). Built with the io part.
#include "estuary.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/capi_detail.hpp"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"

using namespace estuary::capi;

// ---- I/O (estuary::io) ------------------------------------------------------------------------

struct est_io_s {
  std::unique_ptr<estuary::io::Output> out;
};

struct est_io_reader_s {
  std::unique_ptr<estuary::io::Reader> reader;
};

namespace {

estuary::io::Output& io_of(est_io io) {
  require(io, "io");
  return *io->out;
}

std::string opt_str(const char* s) { return s ? s : ""; }

}  // namespace

extern "C" {

int est_io_open(const char* config, MPI_Comm comm, est_io* out) {
  if (config && std::string_view(config).ends_with(".xml"))  // an XIOS iodef.xml
    return est_io_open_xios(config, nullptr, 0.0, nullptr, nullptr, 0, nullptr, 0, comm, out);
  clear_out(out);
  return guarded("est_io_open", EST_ERR_IO, [&] {
    require(config, "config");
    require(out, "out");
    auto o = std::make_unique<estuary::io::Output>(estuary::io::OutputConfig::from_yaml_file(config), comm);
    *out = new est_io_s{std::move(o)};
  });
}

int est_io_open_xios(const char* iodef, const char* context, double timestep_s, const char* substitutions,
                     const char* mode, int writers, const char* directory, int skip_unsupported, MPI_Comm comm,
                     est_io* out) {
  clear_out(out);
  return guarded("est_io_open_xios", EST_ERR_IO, [&] {
    require(iodef, "iodef");
    require(out, "out");
    estuary::io::XiosXmlOptions opt;
    opt.context = opt_str(context);
    opt.timestep_s = timestep_s;
    opt.skip_unsupported = skip_unsupported != 0;
    // "KEY=VALUE,KEY=VALUE": NEMO's @KEY@ file-name templates
    std::string_view rest = substitutions ? substitutions : "";
    while (!rest.empty()) {
      const std::string_view item = rest.substr(0, rest.find(','));
      rest = item.size() < rest.size() ? rest.substr(item.size() + 1) : std::string_view{};
      const std::size_t eq = item.find('=');
      if (eq == 0 || eq == std::string_view::npos)
        throw std::invalid_argument("substitutions: '" + std::string(item) + "' is not KEY=VALUE");
      opt.substitutions[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    }
    estuary::io::XiosXmlInfo info;
    estuary::io::OutputConfig cfg = estuary::io::OutputConfig::from_xios_xml(iodef, opt, &info);
    if (mode) cfg.mode = estuary::from_name<estuary::io::Mode>(mode);
    if (writers < 0) throw std::invalid_argument("writers must be positive (0 keeps the default)");
    if (writers > 0) cfg.writers = writers;
    if (directory) cfg.directory = directory;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
      for (const std::string& w : info.warnings) std::fprintf(stderr, "estuary: warning: %s\n", w.c_str());
    *out = new est_io_s{std::make_unique<estuary::io::Output>(cfg, comm)};
  });
}

int est_io_is_server(est_io io, int* is_server) {
  return guarded("est_io_is_server", EST_ERR_ARGUMENT, [&] {
    require(is_server, "is_server");
    *is_server = io_of(io).is_server() ? 1 : 0;
  });
}

int est_io_model_comm(est_io io, MPI_Comm* model_comm) {
  return guarded("est_io_model_comm", EST_ERR_ARGUMENT, [&] {
    require(model_comm, "model_comm");
    *model_comm = io_of(io).model_comm();
  });
}

int est_io_serve(est_io io) {
  return guarded("est_io_serve", EST_ERR_IO, [&] { io_of(io).serve(); });
}

int est_io_def_grid(est_io io, const char* name, const char* kind, int64_t nx, int64_t ny,
                    const int64_t* points, int64_t n, const double* lon, const double* lat, int ncorner,
                    const double* corner_lon, const double* corner_lat) {
  return guarded("est_io_def_grid", EST_ERR_IO, [&] {
    require(name, "name");
    require(kind, "kind");
    require_count(n, "n");
    require_count(ncorner, "ncorner");
    if (n > 0) {
      require(points, "points");
      require(lon, "lon");
      require(lat, "lat");
      if (ncorner > 0) {
        require(corner_lon, "corner_lon");
        require(corner_lat, "corner_lat");
      }
    }
    if (nx <= 0 || ny <= 0) throw std::invalid_argument("nx and ny must be positive");
    estuary::Grid g;
    g.kind = estuary::from_name<estuary::GridKind>(kind);  // the core's names and their error
    g.name = name;
    const std::int64_t sizes[2] = {nx, ny};
    g.dims = estuary::grid_dims_of(g.kind, sizes);  // (nx, ny) for 2-D kinds, (nx * ny) otherwise
    g.global_size = nx * ny;
    const auto un = static_cast<std::size_t>(n);
    if (n > 0) {
      g.points.assign(points, points + un);
      g.lon.assign(lon, lon + un);
      g.lat.assign(lat, lat + un);
      g.ncorner = ncorner;
      if (ncorner > 0) {
        g.corner_lon.assign(corner_lon, corner_lon + un * static_cast<std::size_t>(ncorner));
        g.corner_lat.assign(corner_lat, corner_lat + un * static_cast<std::size_t>(ncorner));
      }
    } else {
      g.ncorner = ncorner;
    }
    io_of(io).def_grid(name, g);
  });
}

int est_io_def_field(est_io io, const char* name, const char* grid, const double* levels, int nlev,
                     est_decomp d, const char* units, const char* long_name, const char* standard_name) {
  return est_io_def_field_masked(io, name, grid, levels, nlev, d, units, long_name, standard_name, nullptr, 0);
}

int est_io_def_field_masked(est_io io, const char* name, const char* grid, const double* levels, int nlev,
                            est_decomp d, const char* units, const char* long_name, const char* standard_name,
                            const int32_t* mask, int64_t n) {
  return guarded("est_io_def_field", EST_ERR_IO, [&] {
    require(name, "name");
    require(grid, "grid");
    require(d, "d");
    require_count(nlev, "nlev");
    if (nlev > 0) require(levels, "levels");
    estuary::io::FieldDef f;
    f.name = name;
    f.grid = grid;
    if (nlev > 0) f.levels.assign(levels, levels + nlev);
    f.decomp = d->decomp;
    f.units = opt_str(units);
    f.long_name = opt_str(long_name);
    f.standard_name = opt_str(standard_name);
    require_count(n, "n");
    if (n > 0) {
      require(mask, "mask");
      if (n != d->decomp.size())
        throw estuary::Error("mask of " + std::to_string(n) + " values, the decomposition holds " +
                                 std::to_string(d->decomp.size()),
                             std::string("field ") + name, "give one mask value per local value (d's order)");
      f.mask.assign(mask, mask + n);
    }
    io_of(io).def_field(f);
  });
}

int est_io_enddef(est_io io) {
  return guarded("est_io_enddef", EST_ERR_IO, [&] { io_of(io).end_def(); });
}

int est_io_write(est_io io, const char* field, double time, const double* values, int64_t n) {
  bool terminated = false;
  const int rc = guarded("est_io_write", EST_ERR_IO, [&] {
    require(field, "field");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    try {
      io_of(io).write(field, time, {values, static_cast<std::size_t>(n)});
    } catch (const estuary::io::Terminated&) {
      terminated = true;
      throw;
    }
  });
  return terminated ? EST_IO_TERMINATED : rc;
}

int est_io_flush(est_io io) {
  return guarded("est_io_flush", EST_ERR_IO, [&] { io_of(io).flush(); });
}

int est_io_close(est_io io) {
  return guarded("est_io_close", EST_ERR_IO, [&] { io_of(io).close(); });
}

int est_io_get_stats(est_io io, est_io_stats* out) {
  return guarded("est_io_get_stats", EST_ERR_ARGUMENT, [&] {
    require(out, "out");
    const estuary::io::IoStats& s = io_of(io).stats();
    *out = est_io_stats{s.records_handed_over, s.records_written, s.bytes_written, s.files_created, s.write_s,
                        s.transfer_s,          s.model_io_s,      s.derived_s};
  });
}

int est_io_get_report(est_io io, double run_s, double run_without_io_s, est_io_report* out) {
  return guarded("est_io_get_report", EST_ERR_IO, [&] {
    require(out, "out");
    const estuary::io::IoReport r = io_of(io).report(run_s, run_without_io_s);
    *out = est_io_report{r.ranks, r.model_ranks, r.writers, r.bytes_written, r.records_written, r.files_created,
                         r.write_s, r.write_mb_per_s, r.model_io_s, r.run_s, r.run_without_io_s, r.core_hours,
                         r.data_output_cost, r.data_intensity};
  });
}

int est_io_free(est_io* io) {
  return guarded("est_io_free", EST_ERR_IO, [&] {
    if (io == nullptr || *io == nullptr) return;
    est_io p = *io;
    *io = nullptr;
    delete p;  // the destructor closes (collective) if close was not called
  });
}

int est_io_reader_open(const char* path, MPI_Comm comm, est_io_reader* out) {
  clear_out(out);
  return guarded("est_io_reader_open", EST_ERR_IO, [&] {
    require(path, "path");
    require(out, "out");
    *out = new est_io_reader_s{std::make_unique<estuary::io::Reader>(path, comm)};
  });
}

int est_io_reader_set_period(est_io_reader r, double period) {
  return guarded("est_io_reader_set_period", EST_ERR_IO, [&] {
    require(r, "r");
    r->reader->set_period(period);
  });
}

int est_io_read(est_io_reader r, const char* var, double time, est_decomp d, double* values, int64_t n) {
  return guarded("est_io_read", EST_ERR_IO, [&] {
    require(r, "r");
    require(var, "var");
    require(d, "d");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    r->reader->read(var, time, d->decomp, {values, static_cast<std::size_t>(n)});
  });
}

int est_io_reader_free(est_io_reader* r) {
  return guarded("est_io_reader_free", EST_ERR_IO, [&] {
    if (r == nullptr || *r == nullptr) return;
    est_io_reader p = *r;
    *r = nullptr;
    delete p;
  });
}

}  // extern "C"
