// The C API (estuary.h), its coupler part (est_comp_*, grid recipes): opaque handles over the
// C++ classes, exceptions turned into error codes (see estuary_c.cpp). Built with the couple part.
#include "estuary.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capi/capi_detail.hpp"
#include "estuary/couple.hpp"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"

using namespace estuary::capi;

struct est_comp_s {
  std::unique_ptr<estuary::Component> comp;
};

namespace {
// Every est_comp_* failure is also written to the component's log, from the rank that failed:
// the C and Fortran callers get an error code, the log keeps its cause.
int logged(est_comp c, int rc) noexcept {
  if (rc != EST_OK && c != nullptr && c->comp) {
    try {
      c->comp->log_error(last_error);
    } catch (...) {
    }
  }
  return rc;
}
}  // namespace

extern "C" {

// ---- coupler ---------------------------------------------------------------------------------

int est_comp_new(const char* name, MPI_Comm world, const char* config, const char* directory, est_comp* out) {
  clear_out(out);
  return guarded("est_comp_new", EST_ERR_COUPLE, [&] {
    require(name, "name");
    require(out, "out");
    estuary::ComponentOptions o;
    o.world = world;
    if (config) o.config = config;
    if (directory) o.directory = directory;
    auto c = std::make_unique<est_comp_s>();
    c->comp = std::make_unique<estuary::Component>(name, o);
    *out = c.release();
  });
}

int est_comp_comm(est_comp c, MPI_Comm* local) {
  return logged(c, guarded("est_comp_comm", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(local, "local");
    *local = c->comp->comm();
  }));
}

int est_comp_def_partition(est_comp c, const int64_t* ig_paral, int64_t len, int64_t global_size, const char* name,
                           int* id) {
  return logged(c, guarded("est_comp_def_partition", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(ig_paral, "ig_paral");
    require(id, "id");
    require_count(len, "len");
    const std::span<const int64_t> ig{ig_paral, static_cast<std::size_t>(len)};
    // global_size < 0: inferred as OASIS does without ig_size (collective over the coupling ranks).
    const int64_t n = global_size < 0 ? estuary::oasis_partition_global_size(ig, c->comp->coupling_comm()) : global_size;
    *id = c->comp->def_partition(estuary::oasis_partition(ig, n), name ? name : "");
  }));
}

int est_comp_def_partition_decomp(est_comp c, est_decomp d, const char* name, int* id) {
  return logged(c, guarded("est_comp_def_partition_decomp", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(d, "d");
    require(id, "id");
    *id = c->comp->def_partition(d->decomp, name ? name : "");
  }));
}

int est_comp_def_grid(est_comp c, const char* name, int partition, int64_t nx, int64_t ny, const double* lon,
                      const double* lat, int ncorner, const double* corner_lon, const double* corner_lat,
                      const int32_t* mask, const double* area) {
  return logged(c, guarded("est_comp_def_grid", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    if (ncorner < 0) throw std::invalid_argument("argument 'ncorner' is negative");
    if (ncorner > 0) {
      require(corner_lon, "corner_lon");
      require(corner_lat, "corner_lat");
    }
    // The partition's local size: the grid's arrays have one entry per local point.
    int64_t n = 0;
    n = c->comp->partition_size(partition);
    if (n > 0) {
      require(lon, "lon");
      require(lat, "lat");
    }
    const auto un = static_cast<std::size_t>(n), nc = un * static_cast<std::size_t>(ncorner);
    estuary::Grid g;
    g.kind = ny > 1 ? estuary::GridKind::curvilinear : estuary::GridKind::unstructured;
    g.dims = ny > 1 ? std::vector<int64_t>{nx, ny} : std::vector<int64_t>{nx};
    g.lon.assign(lon, lon + un);
    g.lat.assign(lat, lat + un);
    g.ncorner = ncorner;
    if (ncorner > 0) {
      g.corner_lon.assign(corner_lon, corner_lon + nc);
      g.corner_lat.assign(corner_lat, corner_lat + nc);
    }
    if (mask) g.mask.assign(mask, mask + un);
    if (area) g.area.assign(area, area + un);
    c->comp->def_grid(name, partition, std::move(g));
  }));
}

// ---- OASIS grid files (Component::start_grids_writing ... terminate_grids_writing) -----------

int est_comp_start_grids_writing(est_comp c, int* flag) {
  return guarded("est_comp_start_grids_writing", EST_ERR_COUPLE, [&] {
    require(c, "c");
    const bool f = c->comp->start_grids_writing();
    if (flag) *flag = f ? 1 : 0;
  });
}

int est_comp_write_grid(est_comp c, const char* name, int64_t nx, int64_t ny, const double* lon, const double* lat,
                        int64_t n, int partition) {
  return guarded("est_comp_write_grid", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require_count(n, "n");
    if (n > 0) {
      require(lon, "lon");
      require(lat, "lat");
    }
    const auto un = static_cast<std::size_t>(n);
    c->comp->write_grid(name, nx, ny, {lon, un}, {lat, un}, partition);
  });
}

int est_comp_write_corner(est_comp c, const char* name, int64_t nx, int64_t ny, int nc, const double* clo,
                          const double* cla, int64_t n, int partition) {
  return guarded("est_comp_write_corner", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require_count(n, "n");
    if (n > 0) {
      require(clo, "clo");
      require(cla, "cla");
    }
    const auto un = static_cast<std::size_t>(n);
    c->comp->write_corner(name, nx, ny, nc, {clo, un}, {cla, un}, partition);
  });
}

int est_comp_write_mask(est_comp c, const char* name, int64_t nx, int64_t ny, const int32_t* mask, int64_t n,
                        int partition) {
  return guarded("est_comp_write_mask", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require_count(n, "n");
    if (n > 0) require(mask, "mask");
    c->comp->write_mask(name, nx, ny, {mask, static_cast<std::size_t>(n)}, partition);
  });
}

int est_comp_write_area(est_comp c, const char* name, int64_t nx, int64_t ny, const double* area, int64_t n,
                        int partition) {
  return guarded("est_comp_write_area", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require_count(n, "n");
    if (n > 0) require(area, "area");
    c->comp->write_area(name, nx, ny, {area, static_cast<std::size_t>(n)}, partition);
  });
}

int est_comp_terminate_grids_writing(est_comp c) {
  return guarded("est_comp_terminate_grids_writing", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->terminate_grids_writing();
  });
}

// ---- end of OASIS grid files ------------------------------------------------------------------

int est_comp_def_var(est_comp c, const char* name, int partition, est_direction direction, int bundle, int* id) {
  return logged(c, guarded("est_comp_def_var", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require(id, "id");
    const int d = enum_value(direction);
    if (d != EST_IN && d != EST_OUT) throw std::invalid_argument("argument 'direction' is neither EST_IN nor EST_OUT");
    *id = c->comp->def_var(name, partition, d == EST_OUT ? estuary::Direction::out : estuary::Direction::in, bundle);
  }));
}

int est_comp_enddef(est_comp c) {
  return logged(c, guarded("est_comp_enddef", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->enddef();
  }));
}

int est_comp_put(est_comp c, int var, double time, const double* values, int64_t n, est_info* info) {
  return logged(c, guarded("est_comp_put", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    const estuary::Info i = c->comp->put(var, time, {values, static_cast<std::size_t>(n)});
    if (info) *info = static_cast<est_info>(static_cast<int>(i));
  }));
}

int est_comp_put_ext(est_comp c, int var, double time, const double* values, int64_t n,
                     const double* const* gradients, int ngrad, const double* fraction, est_info* info) {
  return logged(c, guarded("est_comp_put_ext", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    if (ngrad < 0) throw std::invalid_argument("argument 'ngrad' = " + std::to_string(ngrad) + " is negative");
    if (ngrad > 0) require(gradients, "gradients");
    const auto un = static_cast<std::size_t>(n);
    estuary::PutExtras extra;
    for (int j = 0; j < ngrad; ++j) {
      if (n > 0 && !gradients[j])
        throw std::invalid_argument("argument 'gradients[" + std::to_string(j) + "]' is NULL");
      extra.gradients.emplace_back(gradients[j], un);
    }
    if (fraction) extra.fraction = {fraction, un};
    const estuary::Info i = c->comp->put(var, time, {values, un}, extra);
    if (info) *info = static_cast<est_info>(static_cast<int>(i));
  }));
}

struct est_links_s {
  estuary::Links links;
};

int est_links_add(est_links_out out, int64_t target, int64_t source, double weight) {
  if (!out) return EST_ERR_ARGUMENT;
  out->links.add(target, source, weight);
  return EST_OK;
}

int est_comp_register_weights(est_comp c, const char* name, est_weight_fn fn, void* ctx) {
  return logged(c, guarded("est_comp_register_weights", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    if (!fn) throw std::invalid_argument("argument 'fn' is NULL");
    const std::string fname = name;
    c->comp->register_weights(fname, [fn, ctx, fname](const estuary::WeightQuery& q) {
      const est_weight_query cq{q.coupling.c_str(),
                               static_cast<int64_t>(q.src_lon.size()),
                               q.src_lon.data(),
                               q.src_lat.data(),
                               q.src_mask.empty() ? nullptr : q.src_mask.data(),
                               static_cast<int64_t>(q.dst_index.size()),
                               q.dst_index.data(),
                               q.dst_lon.data(),
                               q.dst_lat.data()};
      est_links_s out;
      const int rc = fn(ctx, &cq, &out);
      if (rc != 0)
        throw estuary::Error("the C weight function \"" + fname + "\" returned " + std::to_string(rc),
                             "weight function of " + q.coupling);
      return std::move(out.links);
    });
  }));
}

int est_comp_get(est_comp c, int var, double time, double* values, int64_t n, est_info* info) {
  return logged(c, guarded("est_comp_get", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    const estuary::Info i = c->comp->get(var, time, {values, static_cast<std::size_t>(n)});
    if (info) *info = static_cast<est_info>(static_cast<int>(i));
  }));
}

int est_comp_terminate(est_comp c) {
  return logged(c, guarded("est_comp_terminate", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->terminate();
  }));
}

int est_comp_free(est_comp* c) {
  if (c == nullptr || *c == nullptr) return EST_OK;
  const int rc = est_comp_terminate(*c);  // a no-op after est_comp_terminate
  delete *c;
  *c = nullptr;
  return rc;
}

// ---- coupling communicator, abort ----------------------------------------------------------

int est_comp_create_couplcomm(est_comp c, int coupled, MPI_Comm local, MPI_Comm* couplcomm) {
  if (couplcomm != nullptr) *couplcomm = MPI_COMM_NULL;
  return logged(c, guarded("est_comp_create_couplcomm", EST_ERR_MPI, [&] {
    require(c, "c");
    require(couplcomm, "couplcomm");
    if (local == MPI_COMM_NULL) throw std::invalid_argument("argument 'local' is MPI_COMM_NULL");
    int rank = 0;
    MPI_Comm_rank(local, &rank);
    if (MPI_Comm_split(local, coupled ? 0 : MPI_UNDEFINED, rank, couplcomm) != MPI_SUCCESS)
      throw estuary::MpiError("MPI_Comm_split failed (component \"" + c->comp->name() + "\")", "");
    // As OASIS's oasis_create_couplcomm, which calls oasis_set_couplcomm: the new communicator
    // is also the component's coupling communicator.
    try {
      c->comp->set_couplcomm(*couplcomm);
    } catch (const estuary::MpiError&) {
      if (*couplcomm != MPI_COMM_NULL) MPI_Comm_free(couplcomm);
      throw;
    } catch (const estuary::Error& e) {  // e.g. `local` holds ranks of other components
      if (*couplcomm != MPI_COMM_NULL) MPI_Comm_free(couplcomm);
      throw std::invalid_argument(e.what());
    }
  }));
}

int est_comp_abort(est_comp c, const char* message, int errorcode) {
  std::string who = "estuary abort";
  try {
    if (c != nullptr && c->comp) who += ": component " + c->comp->name();
  } catch (...) {
  }
  std::fprintf(stderr, "%s: %s\n", who.c_str(), message ? message : "");
  try {  // OASIS writes the abort to the component's debug file too
    if (c != nullptr && c->comp) c->comp->log_error(std::string("abort: ") + (message ? message : ""));
  } catch (...) {
  }
  std::fflush(stdout);
  std::fflush(stderr);
  int up = 0, down = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (up && !down) MPI_Abort(MPI_COMM_WORLD, errorcode);
  record("est_comp_abort", "MPI is not running: nothing to abort");
  return EST_ERR_MPI;
}

int est_comp_runtime(est_comp c, double* runtime) {
  return logged(c, guarded("est_comp_runtime", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(runtime, "runtime");
    *runtime = static_cast<double>(c->comp->setup().runtime);
  }));
}

int est_comp_last_source_integral(est_comp c, int var, double* integral) {
  return logged(c, guarded("est_comp_last_source_integral", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(integral, "integral");
    *integral = c->comp->last_source_integral(var);
  }));
}

// ---- grid recipes -----------------------------------------------------------------------------

namespace {
estuary::GridGen grid_gen(const char* kind, int64_t n1, int64_t n2, int land) {
  require(kind, "kind");
  try {
    const estuary::GridGen g = estuary::GridGen::from_kind(kind, n1, n2);  // the core knows the kinds
    return land ? g.with_land() : g;
  } catch (const estuary::Error& e) {
    throw std::invalid_argument(e.what());  // a bad argument (EST_ERR_ARGUMENT), whichever call
  }
}
}  // namespace

int est_grid_gen_info(const char* kind, int64_t n1, int64_t n2, int land, int64_t* global_size, int64_t* nx,
                      int64_t* ny, int* ncorner) {
  return guarded("est_grid_gen_info", EST_ERR_ARGUMENT, [&] {
    const estuary::GridGen g = grid_gen(kind, n1, n2, land);
    const std::vector<int64_t>& dims = g.dims();
    if (global_size) *global_size = g.size();
    if (nx) *nx = dims.empty() ? g.size() : dims[0];
    if (ny) *ny = dims.size() > 1 ? dims[1] : 1;
    if (ncorner) *ncorner = g.ncorner();
  });
}

int est_grid_gen_make(const char* kind, int64_t n1, int64_t n2, int land, est_decomp d, double* lon, double* lat,
                      double* corner_lon, double* corner_lat, int32_t* mask, double* area) {
  return guarded("est_grid_gen_make", EST_ERR_DECOMP, [&] {
    require(d, "d");
    const estuary::GridGen gen = grid_gen(kind, n1, n2, land);
    if (d->decomp.global_size() != gen.size())
      throw std::invalid_argument("decomposition of " + std::to_string(d->decomp.global_size()) +
                                  " points for grid \"" + gen.name() + "\" of " + std::to_string(gen.size()));
    const estuary::Grid g = gen.make(d->decomp);
    const auto n = static_cast<std::size_t>(g.size());
    auto copy = [](const auto& v, auto* out) {
      if (out != nullptr && !v.empty()) std::memcpy(out, v.data(), v.size() * sizeof v[0]);
    };
    copy(g.lon, lon);
    copy(g.lat, lat);
    copy(g.corner_lon, corner_lon);
    copy(g.corner_lat, corner_lat);
    copy(g.area, area);
    if (mask != nullptr) {
      if (g.mask.empty())
        for (std::size_t i = 0; i < n; ++i) mask[i] = 1;
      else
        copy(g.mask, mask);
    }
  });
}

// ---- OASIS3-MCT's run-time queries and communicators (estuary.h) ---------------------------

int est_comp_new_coupled(const char* name, MPI_Comm world, const char* config, const char* directory, int coupled,
                         est_comp* out) {
  clear_out(out);
  return guarded("est_comp_new_coupled", EST_ERR_COUPLE, [&] {
    require(name, "name");
    require(out, "out");
    estuary::ComponentOptions o;
    o.world = world;
    if (config) o.config = config;
    if (directory) o.directory = directory;
    o.coupled = coupled != 0;
    auto c = std::make_unique<est_comp_s>();
    c->comp = std::make_unique<estuary::Component>(name, o);
    *out = c.release();
  });
}

int est_comp_set_couplcomm(est_comp c, MPI_Comm couplcomm) {
  return logged(c, guarded("est_comp_set_couplcomm", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->set_couplcomm(couplcomm);
  }));
}

int est_comp_coupling_comm(est_comp c, MPI_Comm* couplcomm) {
  return logged(c, guarded("est_comp_coupling_comm", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(couplcomm, "couplcomm");
    *couplcomm = c->comp->coupling_comm();
  }));
}

int est_comp_put_inquire(est_comp c, int var, double time, est_info* info) {
  return logged(c, guarded("est_comp_put_inquire", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(info, "info");
    *info = static_cast<est_info>(static_cast<int>(c->comp->put_inquire(var, time)));
  }));
}

int est_comp_get_ncpl(est_comp c, int var, int* ncpl) {
  return logged(c, guarded("est_comp_get_ncpl", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(ncpl, "ncpl");
    *ncpl = c->comp->get_ncpl(var);
  }));
}

int est_comp_get_freqs(est_comp c, int var, int kinout, int ncpl, double* periods) {
  return logged(c, guarded("est_comp_get_freqs", EST_ERR_COUPLE, [&] {
    require(c, "c");
    // OASIS's OASIS_Out / OASIS_In, or estuary's EST_OUT / EST_IN.
    if (kinout != EST_OASIS_OUT && kinout != EST_OASIS_IN && kinout != EST_OUT && kinout != EST_IN)
      throw std::invalid_argument("argument 'kinout' = " + std::to_string(kinout) +
                                  " is neither EST_OASIS_OUT (20) nor EST_OASIS_IN (21) (nor EST_OUT, EST_IN)");
    const bool out = kinout == EST_OASIS_OUT || kinout == EST_OUT;
    const std::vector<double> p = c->comp->get_freqs(var, out ? estuary::Direction::out : estuary::Direction::in);
    if (ncpl != static_cast<int>(p.size()))  // OASIS aborts on it: the caller's array is of the wrong size
      throw std::invalid_argument("argument 'ncpl' = " + std::to_string(ncpl) + ", but variable " + std::to_string(var) +
                                  " takes part in " + std::to_string(p.size()) + " couplings (est_comp_get_ncpl)");
    if (ncpl > 0) require(periods, "periods");
    std::copy(p.begin(), p.end(), periods);
  }));
}

int est_comp_get_intercomm(est_comp c, const char* other, MPI_Comm* newcomm) {
  if (newcomm != nullptr) *newcomm = MPI_COMM_NULL;
  return logged(c, guarded("est_comp_get_intercomm", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(other, "other");
    require(newcomm, "newcomm");
    *newcomm = c->comp->get_intercomm(other);
  }));
}

int est_comp_get_intracomm(est_comp c, const char* other, MPI_Comm* newcomm) {
  if (newcomm != nullptr) *newcomm = MPI_COMM_NULL;
  return logged(c, guarded("est_comp_get_intracomm", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(other, "other");
    require(newcomm, "newcomm");
    *newcomm = c->comp->get_intracomm(other);
  }));
}

int est_comp_get_multi_intracomm(est_comp c, int n, const char* const* names, MPI_Comm* newcomm, int* root_ranks) {
  if (newcomm != nullptr) *newcomm = MPI_COMM_NULL;
  return logged(c, guarded("est_comp_get_multi_intracomm", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(newcomm, "newcomm");
    require_count(n, "n");
    if (n > 0) require(names, "names");
    std::vector<std::string> list;
    for (int i = 0; i < n; ++i) list.emplace_back(names[i] ? names[i] : "");
    std::vector<int> roots;
    *newcomm = c->comp->get_multi_intracomm(list, &roots);
    if (root_ranks) std::copy(roots.begin(), roots.end(), root_ranks);
  }));
}

int est_comp_get_debug(est_comp c, int* level) {
  return logged(c, guarded("est_comp_get_debug", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(level, "level");
    *level = c->comp->debug_level();
  }));
}

int est_comp_set_debug(est_comp c, int level) {
  return logged(c, guarded("est_comp_set_debug", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    c->comp->set_debug_level(level);
  }));
}

int est_comp_partition_global_size(est_comp c, const int64_t* ig_paral, int64_t len, int64_t* global_size) {
  return logged(c, guarded("est_comp_partition_global_size", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(global_size, "global_size");
    require_count(len, "len");
    if (len > 0) require(ig_paral, "ig_paral");
    *global_size = estuary::oasis_partition_global_size({ig_paral, static_cast<std::size_t>(len)},
                                                        c->comp->coupling_comm());
  }));
}

int est_comp_log_error(est_comp c, const char* message) {
  return guarded("est_comp_log_error", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(message, "message");
    c->comp->log_error(message);
  });
}

int est_comp_in_configuration(est_comp c, const char* field, int* yes) {
  return guarded("est_comp_in_configuration", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(field, "field");
    require(yes, "yes");
    *yes = c->comp->in_configuration(field) ? 1 : 0;
  });
}

}  // extern "C"
