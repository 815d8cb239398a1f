// libFuzzer target: the decomposition constructors (indices, stripes, box) and generators with
// arbitrary 64-bit sizes, starts, counts and strides. Overflowing sizes must give an
// estuary::Error. Only decompositions with few local points are built (the local size is the
// caller's memory, by contract), so a large count is cut to a small one before the call.
#include <cstring>
#include <optional>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "fuzz_util.hpp"

namespace {

struct Bytes {
  const std::uint8_t* p;
  std::size_t n;
  std::int64_t i64() {
    std::int64_t v = 0;
    const std::size_t k = n < 8 ? n : 8;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
  std::uint8_t u8() { return n ? (--n, *p++) : 0; }
};

constexpr std::int64_t kLocalMax = 1 << 10;
// A count the harness lets through: small ones as they are, others folded into [0, 256].
std::int64_t small(std::int64_t v) { return v >= 0 && v <= 256 ? v : (v & 0xff); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes b{data, size};
  const int kind = b.u8() % 5;
  try {
    std::optional<estuary::Decomp> d;
    if (kind == 0) {
      const std::int64_t n = b.i64();
      std::vector<std::int64_t> idx(static_cast<std::size_t>(b.u8() % 16));
      for (auto& x : idx) x = b.i64();
      d = estuary::Decomp::indices(n, idx);
    } else if (kind == 1) {
      const std::int64_t n = b.i64();
      std::vector<estuary::Stripe> s(static_cast<std::size_t>(b.u8() % 8));
      for (auto& x : s) {
        x.start = b.i64();
        x.count = b.i64();
        if (x.count > 256) x.count = small(x.count);
        x.stride = b.i64();
      }
      d = estuary::Decomp::stripes(n, s);
    } else if (kind == 2) {
      const std::size_t nd = b.u8() % 10;
      std::vector<std::int64_t> shape(nd), start(nd), count(nd);
      std::int64_t local = 1;
      for (std::size_t k = 0; k < nd; ++k) {
        shape[k] = b.i64();
        start[k] = b.i64();
        count[k] = small(b.i64());
        local *= count[k] > 0 ? count[k] : 1;
        if (local > kLocalMax) count[k] = 1, local /= 256;
      }
      const auto order = b.u8() % 2 ? estuary::Order::column_major : estuary::Order::row_major;
      d = estuary::Decomp::box(shape, start, count, order);
    } else {
      const std::int64_t n = b.i64();
      const int rank = static_cast<int>(b.i64()), ranks = static_cast<int>(b.i64());
      // The local share is about n / ranks: keep it small.
      if (ranks > 0 && n > 0 && n / ranks > kLocalMax) return 0;
      if (kind == 3) {
        const auto kinds = estuary::gen::kinds();
        d = estuary::gen::by_name(kinds[b.u8() % kinds.size()], n, rank, ranks);
      } else {
        const std::int64_t ny = b.i64();
        if (ranks > 0 && n > 0 && ny > 0 && n / ranks > kLocalMax / ny) return 0;
        d = estuary::gen::messages_pair(n, ny, static_cast<int>(b.u8()), rank, ranks).src;
      }
    }
    if (d->size() <= kLocalMax) (void)d->to_indices();
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
