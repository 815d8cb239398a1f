#include "estuary/decomp.hpp"

#include <string>

#include "common/checked.hpp"
#include "common/mpi_util.hpp"
#include "estuary/error.hpp"

namespace estuary {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void check_global_size(std::int64_t n) {
  if (n < 0)
    throw Error("global size " + str(n) + " is negative", detail::world_rank_label());
}

void check_index(std::int64_t idx, std::int64_t n, const std::string& where) {
  if (idx < 0 || idx >= n)
    throw Error("global index " + str(idx) + " is outside [0, " + str(n) + ")",
                detail::world_rank_label() + ", " + where,
                "every index must be below the global size");
}

}  // namespace

Decomp Decomp::indices(std::int64_t global_size, std::vector<std::int64_t> idx) {
  check_global_size(global_size);
  for (std::size_t i = 0; i < idx.size(); ++i)
    check_index(idx[i], global_size, "local position " + std::to_string(i));
  Decomp d;
  d.kind_ = Kind::indices;
  d.global_size_ = global_size;
  d.size_ = static_cast<std::int64_t>(idx.size());
  d.indices_ = std::move(idx);
  return d;
}

Decomp Decomp::stripes(std::int64_t global_size, std::vector<Stripe> stripes) {
  check_global_size(global_size);
  Decomp d;
  d.kind_ = Kind::stripes;
  d.global_size_ = global_size;
  for (std::size_t i = 0; i < stripes.size(); ++i) {
    const Stripe& s = stripes[i];
    const std::string where = "stripe " + std::to_string(i);
    if (s.count < 0)
      throw Error("stripe count " + str(s.count) + " is negative",
                  detail::world_rank_label() + ", " + where);
    if (s.count == 0) continue;
    check_index(s.start, global_size, where + " start");
    // The last element, computed without overflow: start + (count - 1) * stride.
    std::int64_t span = 0, last = 0;
    if (__builtin_mul_overflow(s.count - 1, s.stride, &span) ||
        __builtin_add_overflow(s.start, span, &last))
      throw Error("stripe start " + str(s.start) + ", count " + str(s.count) + ", stride " +
                      str(s.stride) + " reaches beyond a 64-bit integer",
                  detail::world_rank_label() + ", " + where, "every index must be below the global size");
    check_index(last, global_size, where + " last element");
    d.size_ = detail::checked_add(d.size_, s.count, "the local size", detail::world_rank_label() + ", " + where);
  }
  d.stripes_ = std::move(stripes);
  return d;
}

Decomp Decomp::box(std::vector<std::int64_t> shape, std::vector<std::int64_t> start,
                   std::vector<std::int64_t> count, Order order) {
  const std::size_t nd = shape.size();
  const std::string me = detail::world_rank_label();
  if (nd < 1 || nd > 8 || start.size() != nd || count.size() != nd)
    throw Error("a box needs 1 to 8 dimensions and as many starts and counts as dimensions (got " +
                    std::to_string(nd) + ", " + std::to_string(start.size()) + ", " +
                    std::to_string(count.size()) + ")",
                me);
  std::int64_t global = 1, local = 1;
  for (std::size_t k = 0; k < nd; ++k) {
    if (shape[k] < 0 || count[k] < 0 || start[k] < 0 || start[k] > shape[k] ||
        count[k] > shape[k] - start[k])
      throw Error("box dimension " + std::to_string(k) + " [" + str(start[k]) + ", " +
                      (start[k] <= INT64_MAX - count[k] ? str(start[k] + count[k]) : "beyond 2^63") +
                      ") is outside [0, " + str(shape[k]) + ")",
                  me, "start + count must not exceed the global shape");
    global = detail::checked_mul(global, shape[k], "the box's global size", me + ", dimension " + std::to_string(k));
    local = detail::checked_mul(local, count[k], "the box's local size", me + ", dimension " + std::to_string(k));
  }
  Decomp d;
  d.kind_ = Kind::box;
  d.global_size_ = global;
  d.size_ = local;
  d.shape_ = shape;
  if (local == 0) return d;

  // Visit dimensions from slowest to fastest; the fastest one becomes the stripe.
  std::vector<std::size_t> dims(nd);  // slowest first
  for (std::size_t k = 0; k < nd; ++k) dims[k] = order == Order::row_major ? k : nd - 1 - k;
  std::vector<std::int64_t> gstride(nd);  // global stride of each dimension
  std::int64_t acc = 1;
  for (std::size_t k = nd; k-- > 0;) {
    gstride[dims[k]] = acc;
    acc *= shape[dims[k]];
  }
  const std::size_t fast = dims[nd - 1];
  d.stripes_.reserve(static_cast<std::size_t>(local / count[fast]));
  std::vector<std::int64_t> pos(nd, 0);  // position within the box, slow dimensions only
  while (true) {
    std::int64_t g = 0;
    for (std::size_t k = 0; k < nd; ++k) g += (start[k] + pos[k]) * gstride[k];
    d.stripes_.push_back({g, count[fast], 1});
    // Odometer over the slow dimensions, fastest of them first.
    std::size_t j = nd - 1;
    while (j-- > 0) {
      const std::size_t dim = dims[j];
      if (++pos[dim] < count[dim]) break;
      pos[dim] = 0;
    }
    if (j == static_cast<std::size_t>(-1)) break;
  }
  return d;
}

Decomp Decomp::empty(std::int64_t global_size) { return stripes(global_size, {}); }

std::vector<std::int64_t> Decomp::to_indices() const {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size_));
  for_each_run([&](std::int64_t, std::int64_t g, std::int64_t n, std::int64_t stride) {
    for (std::int64_t k = 0; k < n; ++k) out.push_back(g + k * stride);
  });
  return out;
}

}  // namespace estuary
