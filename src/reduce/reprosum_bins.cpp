// reprosum's per-block kernel: a block of up to 2048 values added to the digits exactly.
//
// Depositing value by value costs a dozen integer operations and three dependent memory updates
// per value. Most blocks of a physical field span few binades, and those go through "bins"
// instead (after Demmel & Nguyen's binned summation), a few floating-point additions a value.
// Bin j is a double S kept in the binade of M_j = 1.5·2^(v_j + 52) (units of 2^-1074), whose
// ulp is 2^v_j. Adding r to S rounds r to a multiple of 2^v_j: the part taken, q = (S + r) − S,
// is exact, and so is the rest r − q (|r − q| <= 2^(v_j − 1)), which goes on to the next bin,
// W bits lower. Every q is at most 2^(v_j + W), and a lane takes at most 256 of them, so S stays
// within 2^(v_j + 51) of M_j, in its binade, and every addition is exact. The last bin's ulp is
// at most the lowest bit of any value of the block, so nothing is left over: the bins hold the
// block's sum exactly and go to the digits once per block. Blocks spanning more than ~115
// binades (4 bins), with values near the top of the double range, or with Inf/NaN, are
// deposited value by value.
//
// The kernels are written once over a SIMD width: 2 doubles (SSE2, every x86-64; NEON) or 4
// (AVX2, chosen at run time on x86-64 CPUs that have it). Since the sum is exact, the kernel
// cannot change the result. ESTUARY_SIMD=generic forces the 2-wide kernel (tests use it).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "reduce/reprosum_digits.hpp"
#include "estuary/settings.hpp"

namespace estuary::detail {
namespace {

constexpr int kBinBits = 42;  // W
constexpr int kMaxBins = 4;
constexpr int kVectors = 4;   // independent vectors a step: no long chain of dependent additions

// Width doubles in one register (a GCC/Clang vector extension). kVectors·Width lanes, 8 or 16,
// so a lane takes at most 2048/8 = 256 values of a block: 2^42 · 256 < 2^51.
template <int Width>
struct Simd {
  typedef double V __attribute__((vector_size(8 * Width)));
  typedef std::int64_t Bits __attribute__((vector_size(8 * Width)));
  static constexpr std::size_t kStep = kVectors * Width;
  static_assert(kBlockGroup % kStep == 0);
};

// 2^e for a normal exponent, built from its bits: std::ldexp is a library call, too slow here.
inline double pow2(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// The block's largest magnitude and a magnitude at or below its smallest non-zero one (+Inf if
// none). NaNs may go unseen here; the bins catch them.
template <int Width>
[[gnu::always_inline]] inline void magnitude_range(const double* x, std::size_t n, double* top,
                                                   double* bottom) {
  using V = typename Simd<Width>::V;
  using Bits = typename Simd<Width>::Bits;
  V hi[kVectors], lo[kVectors];
  for (int q = 0; q < kVectors; ++q) {
    hi[q] = V{};
    lo[q] = V{} + std::numeric_limits<double>::infinity();
  }
  for (std::size_t i = 0; i < n; i += Simd<Width>::kStep) {
    // The next block: this pass is the only one that reads from memory, and it stops and
    // starts once per block, which the hardware prefetcher alone does not smooth over.
    // (Integer arithmetic: past the last block the address lies outside the array.)
    for (std::size_t line = 0; line < Simd<Width>::kStep; line += 8)  // 64-byte lines
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(x + i) +
                                                       (kBlock + line) * sizeof(double)));
    for (int q = 0; q < kVectors; ++q) {
      V v;
      std::memcpy(&v, x + i + static_cast<std::size_t>(q * Width), sizeof v);
      // __builtin_bit_cast, not std::bit_cast: a library function returning a 32-byte vector
      // would be compiled for the baseline ABI outside the AVX2 kernel.
      const Bits a = __builtin_bit_cast(Bits, v) & std::numeric_limits<std::int64_t>::max();  // |v|
      const V mag = __builtin_bit_cast(V, a);
      // The next double below |v| (+0 for the smallest subnormal): for |v| = 0 a negative NaN,
      // which the comparison skips.
      const V below = __builtin_bit_cast(V, a - 1);
      hi[q] = hi[q] < mag ? mag : hi[q];
      lo[q] = below < lo[q] ? below : lo[q];
    }
  }
  *top = 0;
  *bottom = std::numeric_limits<double>::infinity();
  for (int q = 0; q < kVectors; ++q)
    for (int e = 0; e < Width; ++e) {
      *top = std::max(*top, hi[q][e]);
      *bottom = std::min(*bottom, lo[q][e]);
    }
}

// Adds the block through L bins, the top one with ulp 2^v0; false (digits untouched) when a bin
// is not finite, i.e. the block holds Inf or NaN.
template <int L, int Width>
[[gnu::always_inline]] inline bool add_binned(const double* x, std::size_t n, int v0, Digits& d) {
  using V = typename Simd<Width>::V;
  int v[L];
  double m[L];
  V s[L][kVectors];
  for (int j = 0; j < L; ++j) {
    v[j] = std::max(v0 - j * kBinBits, 0);
    m[j] = 1.5 * pow2(v[j] + 52 - 1074);
    for (V& p : s[j]) p = V{} + m[j];
  }
  for (std::size_t i = 0; i < n; i += Simd<Width>::kStep)
    for (int q = 0; q < kVectors; ++q) {
      V r;
      std::memcpy(&r, x + i + static_cast<std::size_t>(q * Width), sizeof r);
      for (int j = 0; j < L; ++j) {
        const V t = s[j][q] + r;
        r -= t - s[j][q];
        s[j][q] = t;
      }
    }
  std::int64_t k[L] = {};
  for (int j = 0; j < L; ++j) {
    // S − M_j is exact (same binade) and a multiple of 2^v_j below 2^51: scaled by 2^-v_j
    // (in two factors, each a normal number) it is an integer, exactly.
    const int up = 1074 - v[j], half = up / 2;
    const double f1 = pow2(half), f2 = pow2(up - half);
    for (const V& p : s[j])
      for (int e = 0; e < Width; ++e) {
        if (!std::isfinite(p[e])) return false;
        k[j] += static_cast<std::int64_t>((p[e] - m[j]) * f1 * f2);
      }
  }
  for (int j = 0; j < L; ++j)
    deposit_int(d.data(), static_cast<std::uint64_t>(k[j] < 0 ? -k[j] : k[j]),
                static_cast<std::uint64_t>(v[j]), k[j] < 0 ? -1 : 0);
  return true;
}

template <int Width>
[[gnu::always_inline]] inline int add_block_with(const double* x, std::size_t n, Digits& d) {
  double top = 0, bottom = 0;
  magnitude_range<Width>(x, n, &top, &bottom);
  // Bit weights (units 2^-1074): tb at or above the top bit of every value, lb at or below the
  // lowest one (0 when all are zero); the top bin's ulp v0 leaves W bits for the largest value.
  const auto weight = [](double a) {
    const std::uint64_t e = std::bit_cast<std::uint64_t>(a) >> 52;
    return static_cast<int>(e ? e - 1 : 0);
  };
  const int tb = weight(top) + 52, lb = top == 0 ? 0 : weight(bottom);
  // At least 2 bins: a value's own 53 bits exceed W.
  const int bins = (tb + 1 - lb + kBinBits - 1) / kBinBits, v0 = tb + 1 - kBinBits;
  if (v0 <= 2044) {  // M_0 and its binade stay below 2^1024 (false for Inf)
    switch (bins) {
      case 2: if (add_binned<2, Width>(x, n, v0, d)) return 0; break;
      case 3: if (add_binned<3, Width>(x, n, v0, d)) return 0; break;
      case 4: if (add_binned<kMaxBins, Width>(x, n, v0, d)) return 0; break;
      default: break;
    }
  }
  int bad = 0;  // wide blocks, huge values, Inf and NaN: value by value
  for (std::size_t i = 0; i < n; ++i) bad += deposit(d.data(), std::bit_cast<std::uint64_t>(x[i]));
  return bad;
}

int add_block_generic(const double* x, std::size_t n, Digits& d) {
  return add_block_with<2>(x, n, d);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ESTUARY_HAVE_AVX2_KERNEL 1
__attribute__((target("avx2"))) int add_block_avx2(const double* x, std::size_t n, Digits& d) {
  return add_block_with<4>(x, n, d);
}
#endif

bool use_avx2() {
#ifdef ESTUARY_HAVE_AVX2_KERNEL
  return __builtin_cpu_supports("avx2") && !Settings::get().simd_generic;
#else
  return false;
#endif
}

}  // namespace

int add_block(const double* x, std::size_t n, Digits& d) {
  [[maybe_unused]] static const bool avx2 = use_avx2();
#ifdef ESTUARY_HAVE_AVX2_KERNEL
  if (avx2) return add_block_avx2(x, n, d);
#endif
  return add_block_generic(x, n, d);
}

}  // namespace estuary::detail
