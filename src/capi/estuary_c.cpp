// The C API (estuary.h), its core part (decompositions, redistribution; the coupler's and the
// I/O part's functions are in estuary_c_couple.cpp and estuary_c_io.cpp): opaque handles over the
// C++ classes, exceptions turned into error codes.
//
// No logic of its own: every function checks its pointers, converts C enums and arrays into the
// C++ types, calls one C++ function and maps what it throws to an est_status. The message of the
// last failure on a thread is kept in a thread_local string for est_last_error().
#include "estuary.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "capi/capi_detail.hpp"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"
#include "estuary/oasis_partition.hpp"
#include "estuary/plan.hpp"
#include "estuary/redist.hpp"
#include "estuary/schedule.hpp"
#include "estuary/types.hpp"

using namespace estuary::capi;

struct est_redist_s {
  estuary::Redist redist;
  // The fields of the exchange in flight: kept until est_redist_finish, since the executor may
  // still refer to them after est_redist_start has returned. A vector of vectors, so that a
  // refused second start leaves the fields of the first one where they are.
  std::vector<std::vector<estuary::Field>> in_flight;
};

namespace {

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
