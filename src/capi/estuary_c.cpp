// The C API (estuary.h): opaque handles over the C++ classes, exceptions turned into error codes.
//
// No logic of its own: every function checks its pointers, converts C enums and arrays into the
// C++ types, calls one C++ function and maps what it throws to an est_status. The message of the
// last failure on a thread is kept in a thread_local string for est_last_error().
#include "estuary.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "estuary/couple.hpp"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"
#include "estuary/plan.hpp"
#include "estuary/redist.hpp"
#include "estuary/schedule.hpp"
#include "estuary/types.hpp"

struct est_decomp_s {
  estuary::Decomp decomp;
};

struct est_comp_s {
  std::unique_ptr<estuary::Component> comp;
};

struct est_redist_s {
  estuary::Redist redist;
  // The fields of the exchange in flight: kept until est_redist_finish, since the executor may
  // still refer to them after est_redist_start has returned. A vector of vectors, so that a
  // refused second start leaves the fields of the first one where they are.
  std::vector<std::vector<estuary::Field>> in_flight;
};

namespace {

thread_local std::string last_error;

// Records the message of a failure in `fn`; drops the "estuary: " prefix of estuary::Error, as
// the function name already says where the message comes from.
void record(const char* fn, const char* what) noexcept {
  try {
    std::string text = what ? what : "";
    if (text.rfind("estuary: ", 0) == 0) text.erase(0, 9);
    last_error = std::string(fn) + ": " + text;
  } catch (...) {
    last_error.clear();  // out of memory while composing the message: leave it empty
  }
}

// Runs `body` and maps what it throws: estuary::Error to `error_code` (the part that failed),
// std::invalid_argument to EST_ERR_ARGUMENT, anything else to EST_ERR_INTERNAL.
template <class F>
int guarded(const char* fn, int error_code, F&& body) noexcept {
  try {
    body();
    return EST_OK;
  } catch (const estuary::MpiError& e) {
    record(fn, e.what());
    return EST_ERR_MPI;
  } catch (const estuary::Error& e) {
    record(fn, e.what());
    return error_code;
  } catch (const std::invalid_argument& e) {
    record(fn, e.what());
    return EST_ERR_ARGUMENT;
  } catch (const std::bad_alloc&) {
    record(fn, "out of memory");
    return EST_ERR_INTERNAL;
  } catch (const std::exception& e) {
    record(fn, e.what());
    return EST_ERR_INTERNAL;
  } catch (...) {
    record(fn, "unknown exception");
    return EST_ERR_INTERNAL;
  }
}

// Throws std::invalid_argument (EST_ERR_ARGUMENT) naming the argument when `p` is NULL.
void require(const void* p, const char* arg) {
  if (p == nullptr) throw std::invalid_argument(std::string("argument '") + arg + "' is NULL");
}

void require_count(std::int64_t n, const char* arg) {
  if (n < 0)
    throw std::invalid_argument(std::string("argument '") + arg + "' is negative (" +
                                std::to_string(n) + ")");
}

// Sets *out to NULL (when out is not NULL) so that a failed constructor leaves no stale handle.
template <class T>
void clear_out(T** out) {
  if (out != nullptr) *out = nullptr;
}

// The value of a C enum as an int. A C caller may pass any int in an enum; in C++ loading an
// enum object whose value is outside its enumerators' range is undefined, so the value is read
// from the object's bytes instead (GCC and Clang give these enums the size of an int).
template <class E>
int enum_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are expected to have the size of an int");
  int v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

estuary::Type to_type(const est_type& t, int i) {
  switch (enum_value(t)) {
    case EST_F64: return estuary::Type::f64;
    case EST_F32: return estuary::Type::f32;
    case EST_I32: return estuary::Type::i32;
    case EST_I64: return estuary::Type::i64;
  }
  throw std::invalid_argument("types[" + std::to_string(i) + "] = " +
                              std::to_string(enum_value(t)) +
                              " is not an est_type (EST_F64, EST_F32, EST_I32, EST_I64)");
}

estuary::Order to_order(const est_order& o) {
  switch (enum_value(o)) {
    case EST_ROW_MAJOR: return estuary::Order::row_major;
    case EST_COLUMN_MAJOR: return estuary::Order::column_major;
  }
  throw std::invalid_argument("order = " + std::to_string(enum_value(o)) +
                              " is not an est_order (EST_ROW_MAJOR, EST_COLUMN_MAJOR)");
}

estuary::RedistOptions to_options(const est_redist_options* o) {
  estuary::RedistOptions r;
  if (o == nullptr) return r;
  if (o->algorithm != nullptr) r.algorithm = o->algorithm;
  switch (enum_value(o->missing)) {
    case EST_MISSING_ERROR: r.plan.missing = estuary::MissingPolicy::error; break;
    case EST_MISSING_FILL: r.plan.missing = estuary::MissingPolicy::fill; break;
    default:
      throw std::invalid_argument("options->missing = " +
                                  std::to_string(enum_value(o->missing)) +
                                  " is not an est_missing (EST_MISSING_ERROR, EST_MISSING_FILL)");
  }
  r.plan.fill_value = o->fill_value;
  switch (enum_value(o->duplicate)) {
    case EST_DUPLICATE_ERROR: r.plan.duplicate = estuary::DuplicatePolicy::error; break;
    case EST_DUPLICATE_LOWEST_RANK: r.plan.duplicate = estuary::DuplicatePolicy::lowest_rank; break;
    default:
      throw std::invalid_argument(
          "options->duplicate = " + std::to_string(enum_value(o->duplicate)) +
          " is not an est_duplicate (EST_DUPLICATE_ERROR, EST_DUPLICATE_LOWEST_RANK)");
  }
  return r;
}

std::vector<std::int64_t> to_vector(const std::int64_t* p, std::int64_t n) {
  return n > 0 ? std::vector<std::int64_t>(p, p + n) : std::vector<std::int64_t>{};
}

// The fields of one exchange, sized from the plan.
std::vector<estuary::Field> to_fields(const estuary::Redist& r, int nfields, const est_type* types,
                                      const void* const* src, void* const* dst) {
  require_count(nfields, "nfields");
  if (nfields > 0) {
    require(types, "types");
    require(src, "src");
    require(dst, "dst");
  }
  const std::int64_t ns = r.plan().src_size(), nd = r.plan().dst_size();
  std::vector<estuary::Field> fields;
  fields.reserve(static_cast<std::size_t>(nfields));
  for (int i = 0; i < nfields; ++i) fields.emplace_back(to_type(types[i], i), src[i], ns, dst[i], nd);
  return fields;
}

}  // namespace

extern "C" {

const char* est_last_error(void) { return last_error.c_str(); }

// ---- decompositions ---------------------------------------------------------------------------

int est_decomp_new_indices(int64_t global_size, const int64_t* indices, int64_t count,
                           est_decomp* out) {
  const char* fn = "est_decomp_new_indices";
  clear_out(out);
  return guarded(fn, EST_ERR_DECOMP, [&] {
    require(out, "out");
    require_count(count, "count");
    if (count > 0) require(indices, "indices");
    *out = new est_decomp_s{estuary::Decomp::indices(global_size, to_vector(indices, count))};
  });
}

int est_decomp_new_stripes(int64_t global_size, const int64_t* start, const int64_t* count,
                           const int64_t* stride, int64_t nstripes, est_decomp* out) {
  const char* fn = "est_decomp_new_stripes";
  clear_out(out);
  return guarded(fn, EST_ERR_DECOMP, [&] {
    require(out, "out");
    require_count(nstripes, "nstripes");
    if (nstripes > 0) {
      require(start, "start");
      require(count, "count");
    }
    std::vector<estuary::Stripe> stripes(static_cast<std::size_t>(nstripes));
    for (std::int64_t i = 0; i < nstripes; ++i)
      stripes[static_cast<std::size_t>(i)] = {start[i], count[i], stride ? stride[i] : 1};
    *out = new est_decomp_s{estuary::Decomp::stripes(global_size, std::move(stripes))};
  });
}

int est_decomp_new_box(int ndims, const int64_t* global_shape, const int64_t* start,
                       const int64_t* count, est_order order, est_decomp* out) {
  const char* fn = "est_decomp_new_box";
  clear_out(out);
  return guarded(fn, EST_ERR_DECOMP, [&] {
    require(out, "out");
    require_count(ndims, "ndims");
    if (ndims > 0) {
      require(global_shape, "global_shape");
      require(start, "start");
      require(count, "count");
    }
    *out = new est_decomp_s{estuary::Decomp::box(to_vector(global_shape, ndims),
                                                 to_vector(start, ndims), to_vector(count, ndims),
                                                 to_order(order))};
  });
}

int est_decomp_size(est_decomp d, int64_t* local_size) {
  return guarded("est_decomp_size", EST_ERR_DECOMP, [&] {
    require(d, "d");
    require(local_size, "local_size");
    *local_size = d->decomp.size();
  });
}

int est_decomp_free(est_decomp* d) {
  if (d == nullptr || *d == nullptr) return EST_OK;
  delete *d;
  *d = nullptr;
  return EST_OK;
}

// ---- redistribution ---------------------------------------------------------------------------

est_redist_options est_redist_options_default(void) {
  est_redist_options o;
  o.algorithm = nullptr;
  o.missing = EST_MISSING_ERROR;
  o.fill_value = 0.0;
  o.duplicate = EST_DUPLICATE_ERROR;
  return o;
}

int est_redist_new(est_decomp src, est_decomp dst, MPI_Comm comm,
                   const est_redist_options* options, est_redist* out) {
  const char* fn = "est_redist_new";
  clear_out(out);
  if (comm == MPI_COMM_NULL)
    return guarded(fn, EST_ERR_ARGUMENT, [] {
      throw std::invalid_argument("argument 'comm' is MPI_COMM_NULL");
    });
  // The constructor is collective: a bad argument on one rank must fail every rank, not leave
  // the others waiting in the plan's first collective.
  estuary::RedistOptions opts;
  int rc = guarded(fn, EST_ERR_ARGUMENT, [&] {
    require(src, "src");
    require(dst, "dst");
    require(out, "out");
    opts = to_options(options);
  });
  int rank = 0, mine = 0, first = 0;
  MPI_Comm_rank(comm, &rank);
  mine = rc == EST_OK ? -1 : rank;
  if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
    return guarded(fn, EST_ERR_MPI, [] { throw estuary::Error("MPI_Allreduce failed", ""); });
  if (rc != EST_OK) return rc;
  if (first >= 0)
    return guarded(fn, EST_ERR_ARGUMENT, [&] {
      throw std::invalid_argument("rank " + std::to_string(first) +
                                  " (of comm) passed a bad argument; see its error message");
    });
  return guarded(fn, EST_ERR_PLAN, [&] {
    *out = new est_redist_s{estuary::Redist(src->decomp, dst->decomp, comm, std::move(opts)), {}};
  });
}

int est_redist_run(est_redist r, int nfields, const est_type* types, const void* const* src,
                   void* const* dst) {
  return guarded("est_redist_run", EST_ERR_EXCHANGE, [&] {
    require(r, "r");
    const std::vector<estuary::Field> fields = to_fields(r->redist, nfields, types, src, dst);
    r->redist.run(fields);
  });
}

int est_redist_start(est_redist r, int nfields, const est_type* types, const void* const* src,
                     void* const* dst) {
  return guarded("est_redist_start", EST_ERR_EXCHANGE, [&] {
    require(r, "r");
    r->in_flight.push_back(to_fields(r->redist, nfields, types, src, dst));
    try {
      r->redist.start(r->in_flight.back());
    } catch (...) {
      r->in_flight.pop_back();
      throw;
    }
  });
}

int est_redist_finish(est_redist r) {
  return guarded("est_redist_finish", EST_ERR_EXCHANGE, [&] {
    require(r, "r");
    r->redist.finish();
    r->in_flight.clear();
  });
}

int est_redist_plan_stats(est_redist r, est_plan_stats* out) {
  return guarded("est_redist_plan_stats", EST_ERR_PLAN, [&] {
    require(r, "r");
    // Collective: compute the statistics even when out is NULL, so that the other ranks do not
    // wait for this one.
    const estuary::PlanStats s = r->redist.plan().stats();
    require(out, "out");
    out->ranks = s.ranks;
    out->messages_total = s.messages_total;
    out->messages_max = s.messages_max;
    out->messages_min = s.messages_min;
    out->messages_avg = s.messages_avg;
    out->elements_total = s.elements_total;
    out->elements_max = s.elements_max;
    out->elements_min = s.elements_min;
    out->elements_avg = s.elements_avg;
    out->self_elements_total = s.self_elements_total;
  });
}

int est_redist_schedule_stats(est_redist r, int* stages, int64_t* messages_sent,
                              int64_t* elements_sent, int64_t* messages_received,
                              int64_t* elements_received) {
  return guarded("est_redist_schedule_stats", EST_ERR_EXCHANGE, [&] {
    require(r, "r");
    require(stages, "stages");
    require(messages_sent, "messages_sent");
    require(elements_sent, "elements_sent");
    require(messages_received, "messages_received");
    require(elements_received, "elements_received");
    const estuary::ScheduleStats s = r->redist.schedule().stats();
    *stages = s.stages;
    *messages_sent = s.messages_sent;
    *elements_sent = s.elements_sent;
    *messages_received = s.messages_received;
    *elements_received = s.elements_received;
  });
}

int est_redist_free(est_redist* r) {
  if (r == nullptr || *r == nullptr) return EST_OK;
  delete *r;
  *r = nullptr;
  return EST_OK;
}

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
  return guarded("est_comp_comm", EST_ERR_ARGUMENT, [&] {
    require(c, "c");
    require(local, "local");
    *local = c->comp->comm();
  });
}

int est_comp_def_partition(est_comp c, const int64_t* ig_paral, int64_t len, int64_t global_size, const char* name,
                           int* id) {
  return guarded("est_comp_def_partition", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(ig_paral, "ig_paral");
    require(id, "id");
    require_count(len, "len");
    *id = c->comp->def_partition(estuary::oasis_partition({ig_paral, static_cast<std::size_t>(len)}, global_size),
                                 name ? name : "");
  });
}

int est_comp_def_partition_decomp(est_comp c, est_decomp d, const char* name, int* id) {
  return guarded("est_comp_def_partition_decomp", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(d, "d");
    require(id, "id");
    *id = c->comp->def_partition(d->decomp, name ? name : "");
  });
}

int est_comp_def_grid(est_comp c, const char* name, int partition, int64_t nx, int64_t ny, const double* lon,
                      const double* lat, int ncorner, const double* corner_lon, const double* corner_lat,
                      const int32_t* mask, const double* area) {
  return guarded("est_comp_def_grid", EST_ERR_COUPLE, [&] {
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
  });
}

int est_comp_def_var(est_comp c, const char* name, int partition, est_direction direction, int bundle, int* id) {
  return guarded("est_comp_def_var", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(name, "name");
    require(id, "id");
    const int d = enum_value(direction);
    if (d != EST_IN && d != EST_OUT) throw std::invalid_argument("argument 'direction' is neither EST_IN nor EST_OUT");
    *id = c->comp->def_var(name, partition, d == EST_OUT ? estuary::Direction::out : estuary::Direction::in, bundle);
  });
}

int est_comp_enddef(est_comp c) {
  return guarded("est_comp_enddef", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->enddef();
  });
}

int est_comp_put(est_comp c, int var, double time, const double* values, int64_t n, est_info* info) {
  return guarded("est_comp_put", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    const estuary::Info i = c->comp->put(var, time, {values, static_cast<std::size_t>(n)});
    if (info) *info = static_cast<est_info>(static_cast<int>(i));
  });
}

int est_comp_get(est_comp c, int var, double time, double* values, int64_t n, est_info* info) {
  return guarded("est_comp_get", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require_count(n, "n");
    if (n > 0) require(values, "values");
    const estuary::Info i = c->comp->get(var, time, {values, static_cast<std::size_t>(n)});
    if (info) *info = static_cast<est_info>(static_cast<int>(i));
  });
}

int est_comp_terminate(est_comp c) {
  return guarded("est_comp_terminate", EST_ERR_COUPLE, [&] {
    require(c, "c");
    c->comp->terminate();
  });
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
  return guarded("est_comp_create_couplcomm", EST_ERR_MPI, [&] {
    require(c, "c");
    require(couplcomm, "couplcomm");
    if (local == MPI_COMM_NULL) throw std::invalid_argument("argument 'local' is MPI_COMM_NULL");
    int rank = 0;
    MPI_Comm_rank(local, &rank);
    if (MPI_Comm_split(local, coupled ? 0 : MPI_UNDEFINED, rank, couplcomm) != MPI_SUCCESS)
      throw estuary::MpiError("MPI_Comm_split failed (component \"" + c->comp->name() + "\")", "");
  });
}

int est_comp_abort(est_comp c, const char* message, int errorcode) {
  std::string who = "estuary abort";
  try {
    if (c != nullptr && c->comp) who += ": component " + c->comp->name();
  } catch (...) {
  }
  std::fprintf(stderr, "%s: %s\n", who.c_str(), message ? message : "");
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
  return guarded("est_comp_runtime", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(runtime, "runtime");
    *runtime = static_cast<double>(c->comp->setup().runtime);
  });
}

int est_comp_last_source_integral(est_comp c, int var, double* integral) {
  return guarded("est_comp_last_source_integral", EST_ERR_COUPLE, [&] {
    require(c, "c");
    require(integral, "integral");
    *integral = c->comp->last_source_integral(var);
  });
}

// ---- grid recipes -----------------------------------------------------------------------------

namespace {
estuary::GridGen grid_gen(const char* kind, int64_t n1, int64_t n2, int land) {
  require(kind, "kind");
  const std::string k = kind;
  auto positive = [&](int64_t v, const char* arg) {
    if (v <= 0) throw std::invalid_argument("grid kind \"" + k + "\": argument '" + arg + "' must be positive");
  };
  estuary::GridGen g = [&] {
    if (k == "t799") return estuary::GridGen::t799();
    if (k == "orca025") return estuary::GridGen::orca025();
    positive(n1, "n1");
    if (k == "reduced_gaussian") return estuary::GridGen::reduced_gaussian(n1);
    if (k == "cubed_sphere") return estuary::GridGen::cubed_sphere(n1);
    positive(n2, "n2");
    if (k == "lonlat") return estuary::GridGen::lonlat(n1, n2);
    if (k == "gaussian") return estuary::GridGen::gaussian(n1, n2);
    if (k == "tripolar") return estuary::GridGen::tripolar(n1, n2);
    throw std::invalid_argument("unknown grid kind \"" + k +
                                "\" (lonlat, gaussian, reduced_gaussian, tripolar, cubed_sphere, t799, orca025)");
  }();
  return land ? g.with_land() : g;
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

int est_decomp_new_oasis(const int64_t* ig_paral, int64_t len, int64_t global_size, est_decomp* out) {
  clear_out(out);
  return guarded("est_decomp_new_oasis", EST_ERR_DECOMP, [&] {
    require(ig_paral, "ig_paral");
    require(out, "out");
    require_count(len, "len");
    *out = new est_decomp_s{estuary::oasis_partition({ig_paral, static_cast<std::size_t>(len)}, global_size)};
  });
}

}  // extern "C"

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
  clear_out(out);
  return guarded("est_io_open", EST_ERR_IO, [&] {
    require(config, "config");
    require(out, "out");
    auto o = std::make_unique<estuary::io::Output>(estuary::io::OutputConfig::from_yaml_file(config), comm);
    *out = new est_io_s{std::move(o)};
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
    bool found = false;
    for (auto k : {estuary::GridKind::lonlat, estuary::GridKind::gaussian, estuary::GridKind::reduced_gaussian,
                   estuary::GridKind::curvilinear, estuary::GridKind::unstructured})
      if (std::string(kind) == estuary::name_of(k)) {
        g.kind = k;
        found = true;
      }
    if (!found) throw std::invalid_argument(std::string("unknown grid kind \"") + kind + "\"");
    g.name = name;
    const bool two_d = g.kind != estuary::GridKind::reduced_gaussian && g.kind != estuary::GridKind::unstructured;
    g.dims = two_d ? std::vector<std::int64_t>{nx, ny} : std::vector<std::int64_t>{nx * ny};
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
    *out = est_io_stats{s.records_handed_over, s.records_written, s.bytes_written, s.files_created,
                        s.write_s, s.transfer_s, s.model_io_s};
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
