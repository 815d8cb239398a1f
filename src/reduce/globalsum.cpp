// Global sums: names, dispatch, and the three methods that are one local loop and one reduction
// (lsum8, lsum16, ddpdd). gather and reprosum live in their own files.
#include "estuary/globalsum.hpp"

#include <cfloat>
#include <cstring>
#include <string>
#include <vector>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "reduce/globalsum_detail.hpp"

// lsum16 needs IEEE binary128. Where long double is binary128 (AArch64, POWER with the IEEE ABI)
// it is the portable spelling; on x86-64 long double is the 80-bit x87 format, so __float128.
#if LDBL_MANT_DIG == 113
using quad = long double;
#elif defined(__SIZEOF_FLOAT128__)
using quad = __float128;
#else
#error "lsum16 needs a binary128 type: __float128 or a 113-bit long double"
#endif
static_assert(sizeof(quad) == 16);

namespace estuary {

using detail::check_mpi;
using detail::Pair;

const char* name_of(SumMethod m) {
  switch (m) {
    case SumMethod::gather: return "gather";
    case SumMethod::lsum8: return "lsum8";
    case SumMethod::lsum16: return "lsum16";
    case SumMethod::ddpdd: return "ddpdd";
    case SumMethod::reprosum: return "reprosum";
  }
  return "unknown";
}

template <>
SumMethod from_name<SumMethod>(std::string_view name) {
  std::string known;
  for (SumMethod m : sum_methods) {
    if (name == name_of(m)) return m;
    known += (known.empty() ? "" : ", ") + std::string(name_of(m));
  }
  throw Error("unknown global sum method '" + std::string(name) + "'", detail::world_rank_label(),
              "known methods: " + known);
}

namespace {

// A double-double: the unevaluated sum hi + lo with |lo| <= ulp(hi)/2. T is double, or Pair
// for two lanes at once.
template <class T>
struct DDOf {
  T hi{}, lo{};
};
using DD = DDOf<double>;

// Adds a double to a double-double as He & Ding do: TwoSum(x, hi) gives the rounded sum and its
// exact error, the error joins lo, and a fast TwoSum renormalises. Written out in this order on
// purpose: the compiler must not (and without -ffast-math does not) reassociate it.
template <class T>
inline void dd_add(DDOf<T>& s, T x) {
  const T t1 = x + s.hi;
  const T e = t1 - x;
  const T t2 = ((s.hi - e) + (x - (t1 - e))) + s.lo;
  s.hi = t1 + t2;
  s.lo = t2 - (s.hi - t1);
}

// He & Ding's DDPDD: the sum of two double-doubles (the body of the custom MPI op).
inline DD dd_add(DD a, DD b) {
  const double t1 = a.hi + b.hi;
  const double e = t1 - a.hi;
  const double t2 = ((b.hi - e) + (a.hi - (t1 - e))) + a.lo + b.lo;
  DD r;
  r.hi = t1 + t2;
  r.lo = t2 - (r.hi - t1);
  return r;
}

// MPI user functions. memcpy because MPI does not promise 16-byte alignment for quad buffers.
void quad_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const unsigned char*>(in);
  auto* b = static_cast<unsigned char*>(inout);
  for (int i = 0; i < *len; ++i, a += sizeof(quad), b += sizeof(quad)) {
    quad x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    y += x;
    std::memcpy(b, &y, sizeof y);
  }
}

void dd_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const DD*>(in);
  auto* b = static_cast<DD*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = dd_add(a[i], b[i]);
}

// The datatypes and ops, made once per process and freed when MPI_Finalize deletes the
// attribute they hang on (MPI_COMM_SELF is freed first thing in MPI_Finalize).
struct SumOps {
  MPI_Datatype quad_type = MPI_DATATYPE_NULL, dd_type = MPI_DATATYPE_NULL;
  MPI_Op quad_sum = MPI_OP_NULL, dd_sum = MPI_OP_NULL;
};

int free_sum_ops(MPI_Comm, int, void* attr, void*) {
  auto* o = static_cast<SumOps*>(attr);
  MPI_Op_free(&o->quad_sum);
  MPI_Op_free(&o->dd_sum);
  MPI_Type_free(&o->quad_type);
  MPI_Type_free(&o->dd_type);
  delete o;
  return MPI_SUCCESS;
}

const SumOps& sum_ops() {
  static const SumOps* ops = [] {
    auto* o = new SumOps;
    // Bytes, not two doubles: a quad is not a pair of doubles to a heterogeneous MPI.
    check_mpi(MPI_Type_contiguous(static_cast<int>(sizeof(quad)), MPI_BYTE, &o->quad_type),
              "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&o->quad_type), "MPI_Type_commit");
    check_mpi(MPI_Type_contiguous(2, MPI_DOUBLE, &o->dd_type), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&o->dd_type), "MPI_Type_commit");
    // Both sums are commutative (equal results for either operand order), so MPI may reorder.
    check_mpi(MPI_Op_create(quad_sum_op, 1, &o->quad_sum), "MPI_Op_create");
    check_mpi(MPI_Op_create(dd_sum_op, 1, &o->dd_sum), "MPI_Op_create");
    int key = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_sum_ops, &key, nullptr),
              "MPI_Comm_create_keyval");
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, key, o), "MPI_Comm_set_attr");
    return o;
  }();
  return *ops;
}

// Local double sum over the eight lanes, then the lanes and the tail in a fixed order.
double local_sum8(std::span<const double> x) {
  using detail::load_pair;
  Pair s0{}, s1{}, s2{}, s3{};
  std::size_t i = 0;
  for (; i + detail::kLanes <= x.size(); i += detail::kLanes) {
    s0 += load_pair(&x[i]);
    s1 += load_pair(&x[i + 2]);
    s2 += load_pair(&x[i + 4]);
    s3 += load_pair(&x[i + 6]);
  }
  const Pair s = (s0 + s1) + (s2 + s3);
  double sum = s[0] + s[1];
  for (; i < x.size(); ++i) sum += x[i];
  return sum;
}

// Local double-double sum: He & Ding's addition in the eight lanes, which are then combined,
// with the tail, by the DDPDD addition in a fixed order.
DD local_sum_dd(std::span<const double> x) {
  using detail::load_pair;
  DDOf<Pair> s[detail::kPairs];
  std::size_t i = 0;
  for (; i + detail::kLanes <= x.size(); i += detail::kLanes)
    for (std::size_t q = 0; q < detail::kPairs; ++q) dd_add(s[q], load_pair(&x[i + 2 * q]));
  DD sum;
  for (const DDOf<Pair>& lane : s)
    for (int e = 0; e < 2; ++e) sum = dd_add(sum, DD{lane.hi[e], lane.lo[e]});
  for (; i < x.size(); ++i) dd_add(sum, x[i]);
  return sum;
}

// Local quad sum in four interleaved accumulators (each addition is a libgcc call on x86-64;
// independent chains let calls overlap). The order is fixed by the local length.
quad local_sum16(std::span<const double> x) {
  quad s[4] = {};
  std::size_t i = 0;
  for (; i + 4 <= x.size(); i += 4)
    for (std::size_t k = 0; k < 4; ++k) s[k] += x[i + k];
  for (; i < x.size(); ++i) s[0] += x[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

void lsum8_sums(detail::SumFields fields, std::span<double> out, MPI_Comm comm) {
  std::vector<double> local(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) local[f] = local_sum8(fields[f]);
  check_mpi(MPI_Allreduce(local.data(), out.data(), static_cast<int>(out.size()), MPI_DOUBLE,
                          MPI_SUM, comm),
            "MPI_Allreduce");
}

void lsum16_sums(detail::SumFields fields, std::span<double> out, MPI_Comm comm) {
  std::vector<quad> local(fields.size()), global(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f)
    local[f] = local_sum16(fields[f]);
  const SumOps& ops = sum_ops();
  check_mpi(MPI_Allreduce(local.data(), global.data(), static_cast<int>(out.size()),
                          ops.quad_type, ops.quad_sum, comm),
            "MPI_Allreduce");
  for (std::size_t f = 0; f < out.size(); ++f) out[f] = static_cast<double>(global[f]);
}

void ddpdd_sums(detail::SumFields fields, std::span<double> out, MPI_Comm comm) {
  std::vector<DD> local(fields.size()), global(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f)
    local[f] = local_sum_dd(fields[f]);
  const SumOps& ops = sum_ops();
  check_mpi(MPI_Allreduce(local.data(), global.data(), static_cast<int>(out.size()), ops.dd_type,
                          ops.dd_sum, comm),
            "MPI_Allreduce");
  // hi is already hi + lo rounded to nearest (the pair is normalised); the sum keeps it so.
  for (std::size_t f = 0; f < out.size(); ++f) out[f] = global[f].hi + global[f].lo;
}

}  // namespace

void global_sums(std::span<const std::span<const double>> fields, std::span<double> out,
                 MPI_Comm comm, SumMethod m, std::span<const std::int64_t> global_index) {
  if (out.size() != fields.size())
    throw Error("global_sums: " + std::to_string(fields.size()) + " fields but " +
                    std::to_string(out.size()) + " results",
                detail::world_rank_label(), "pass one result slot per field");
  if (fields.empty()) return;  // every rank passes the same count, so none communicates
  switch (m) {
    case SumMethod::gather: return detail::gather_sums(fields, out, comm, global_index);
    case SumMethod::lsum8: return lsum8_sums(fields, out, comm);
    case SumMethod::lsum16: return lsum16_sums(fields, out, comm);
    case SumMethod::ddpdd: return ddpdd_sums(fields, out, comm);
    case SumMethod::reprosum: return detail::reprosum_sums(fields, out, comm);
  }
  throw Error("invalid SumMethod value " + std::to_string(static_cast<int>(m)),
              detail::world_rank_label(), "use one of estuary::sum_methods");
}

double global_sum(std::span<const double> local, MPI_Comm comm, SumMethod m,
                  std::span<const std::int64_t> global_index) {
  const std::span<const double> one[1] = {local};
  double out = 0;
  global_sums(one, std::span<double>(&out, 1), comm, m, global_index);
  return out;
}

}  // namespace estuary
