// reprosum's fixed-point accumulator, shared by reprosum.cpp (local sums, reductions, rounding)
// and reprosum_bins.cpp (the fast per-block kernels).
//
// Every finite double is m·2^(p−1074) with an integer m < 2^53 and 0 <= p <= 2045, so it is an
// exact integer multiple of 2^-1074. That integer is written in base 2^32 on one fixed grid of
// "digits" (digit k weighs 2^(32k−1074)), each an int64 with room for carries.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace estuary::detail {

constexpr int kDigitBits = 32;
// 66 digits hold any double (bits 0..2097); the rest take the carries of up to 2^62 summands.
constexpr int kDigits = 70;
constexpr std::int64_t kBase = std::int64_t{1} << kDigitBits;
constexpr std::uint64_t kLow32 = 0xffffffffu;
using Digits = std::array<std::int64_t, kDigits>;

// Adds ±mag·2^(p−1074) to the digits (s = 0 adds, s = −1 subtracts). mag << (p % 32) spans at
// most 96 bits: it is split in three digits, each deposit adding less than 2^33 to a digit.
inline void deposit_int(std::int64_t* d, std::uint64_t mag, std::uint64_t p, std::int64_t s) {
  const std::size_t k = p / kDigitBits;
  const unsigned shift = static_cast<unsigned>(p % kDigitBits);
  const std::uint64_t lo = (mag & kLow32) << shift, hi = (mag >> 32) << shift;
  const std::int64_t d0 = static_cast<std::int64_t>(lo & kLow32);
  const std::int64_t d1 = static_cast<std::int64_t>((lo >> 32) + (hi & kLow32));
  const std::int64_t d2 = static_cast<std::int64_t>(hi >> 32);
  // (v ^ s) − s is v for s = 0 and −v for s = −1, without a branch.
  d[k] += (d0 ^ s) - s;
  d[k + 1] += (d1 ^ s) - s;
  d[k + 2] += (d2 ^ s) - s;
}

// Adds the double with bits u to the digits; returns 1 (and adds nothing) for Inf and NaN.
inline int deposit(std::int64_t* d, std::uint64_t u) {
  const std::uint64_t e = (u >> 52) & 0x7ff;  // biased exponent
  const bool finite = e != 0x7ff;
  // The integer significand (hidden bit for normal numbers), cleared for Inf/NaN.
  const std::uint64_t m = ((u & 0xfffffffffffffu) | (e ? std::uint64_t{1} << 52 : 0)) *
                          static_cast<std::uint64_t>(finite);
  // e − 1 is the weight of m's lowest bit above 2^-1074 (subnormals: e = 0, weight 0).
  deposit_int(d, m, e ? e - 1 : 0, -static_cast<std::int64_t>(u >> 63));
  return finite ? 0 : 1;
}

// Carries so that every digit but the top one lies in [−2^31, 2^31) ("balanced"): a small
// negative sum then stays in low digits instead of turning every digit above into 2^32 − 1.
inline void carry_balanced(Digits& d) {
  for (int k = 0; k + 1 < kDigits; ++k) {
    const std::int64_t c = (d[k] + kBase / 2) >> kDigitBits;  // floor division
    d[k] -= c * kBase;
    d[k + 1] += c;
  }
}

// Adds n values (n a multiple of 16, at most kBlock) to the digits; returns how many were Inf
// or NaN. Exact, whatever path it takes.
// 16 KiB: a block is read twice (range, then bins) and stays in L1 in between; it is large
// enough that the per-block work (a few dozen scalar operations) costs little a value.
constexpr std::size_t kBlock = 2048;
constexpr std::size_t kBlockGroup = 16;
int add_block(const double* x, std::size_t n, Digits& d);

}  // namespace estuary::detail
