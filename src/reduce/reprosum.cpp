// reprosum: exact global sums of doubles in fixed point, after Mirin & Worley (2012).
//
// Each value is an integer multiple of 2^-1074, added exactly on one fixed grid of int64
// "digits" (reprosum_digits.hpp). Integer addition is exact and associative, so the sum does
// not depend on the order or the process count; only the final rounding to double is inexact,
// and it is a function of the exact sum alone.
//
// Mirin & Worley scale every value relative to the global maximum exponent found by a first
// reduction and truncate below a precision-dependent level. The grid here is absolute instead,
// so the data is streamed once, before any communication, and nothing is truncated; the first
// reduction still finds the exponent range in use (highest and lowest non-zero digit) so that
// the second, MPI_SUM on int64, carries only those few digits rather than the whole grid.
// Locally, blocks of 2048 values are summed exactly in floating-point bins (reprosum_bins.cpp),
// which costs about as much as reading the data.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/mpi_util.hpp"
#include "reduce/globalsum_detail.hpp"
#include "reduce/reprosum_digits.hpp"

namespace estuary::detail {
namespace {

// The exact local sum of x in digits; counts Inf/NaN in *nonfinite.
Digits local_digits(std::span<const double> x, std::int64_t* nonfinite) {
  Digits d{};
  std::int64_t bad = 0;
  // A block adds at most kBlock = 2^11 deposits of less than 2^33 to a digit; carrying every
  // 2^18 blocks keeps every digit below 2^63.
  std::size_t blocks = 0;
  for (std::size_t start = 0; start < x.size(); start += kBlock) {
    const std::size_t n = std::min(kBlock, x.size() - start);
    if (n % kBlockGroup == 0) {
      bad += add_block(x.data() + start, n, d);
    } else {  // the last, partial group: padded with zeros, which change no sum
      double padded[kBlock] = {};
      std::memcpy(padded, x.data() + start, n * sizeof(double));
      bad += add_block(padded, (n + kBlockGroup - 1) / kBlockGroup * kBlockGroup, d);
    }
    if (++blocks % (std::size_t{1} << 18) == 0) carry_balanced(d);
  }
  carry_balanced(d);
  *nonfinite = bad;
  return d;
}

// The double nearest to the exact integer sum of the digits times 2^-1074 (ties to even).
double round_to_double(Digits d) {
  carry_balanced(d);
  int top = kDigits - 1;
  while (top >= 0 && d[top] == 0) --top;
  if (top < 0) return 0.0;
  // With balanced digits the sign of the number is the sign of its highest non-zero digit.
  const bool negative = d[top] < 0;
  if (negative)
    for (auto& v : d) v = -v;
  // Now a positive number: carry to plain digits in [0, 2^32).
  for (int k = 0; k + 1 < kDigits; ++k) {
    const std::int64_t c = d[k] >> kDigitBits;
    d[k] -= c * kBase;
    d[k + 1] += c;
  }
  while (d[top] == 0) --top;
  const auto digit = [&](int k) { return k >= 0 ? static_cast<std::uint64_t>(d[k]) : 0; };
  double r = 0;
  if (top < 2) {
    // Below 2^64 units: the integer itself converts with one correct rounding, and a result
    // that needs rounding (>= 2^53 units) is a normal number, so the scaling is exact.
    r = std::ldexp(static_cast<double>(digit(0) | (digit(1) << 32)), -1074);
  } else {
    // The top 64 bits, with a sticky bit for everything below, round correctly to 53 bits in
    // the one integer-to-double conversion (at least two bits of guard below the 53).
    using u128 = unsigned __int128;
    const u128 w = (u128{digit(top)} << 64) | (u128{digit(top - 1)} << 32) | digit(top - 2);
    const int drop = 64 - std::countl_zero(digit(top));  // bits of w above its low 64
    std::uint64_t m = static_cast<std::uint64_t>(w >> drop);
    bool sticky = (w & ((u128{1} << drop) - 1)) != 0;
    for (int k = 0; k < top - 2 && !sticky; ++k) sticky = d[k] != 0;
    m |= static_cast<std::uint64_t>(sticky);
    r = std::ldexp(static_cast<double>(m), kDigitBits * (top - 2) + drop - 1074);
  }
  return negative ? -r : r;
}

}  // namespace

void reprosum_sums(SumFields fields, std::span<double> out, MPI_Comm comm) {
  const std::size_t nf = fields.size();
  std::vector<Digits> local(nf);
  // Reduction 1, per field: highest non-zero digit, minus the lowest one, and whether the field
  // holds NaN, +Inf, −Inf (MPI_MAX of 0/1 is a logical or).
  constexpr int kInfo = 5;
  std::vector<std::int64_t> info(nf * kInfo), range(nf * kInfo);
  for (std::size_t f = 0; f < nf; ++f) {
    std::int64_t nonfinite = 0;
    local[f] = local_digits(fields[f], &nonfinite);
    std::int64_t* in = &info[f * kInfo];
    in[0] = -1;
    in[1] = -kDigits;
    for (int k = 0; k < kDigits; ++k)
      if (local[f][k] != 0) {
        in[0] = k;
        in[1] = std::max<std::int64_t>(in[1], -k);
      }
    if (nonfinite > 0)  // rare: a second look tells which kind
      for (double x : fields[f]) {
        in[2] |= std::isnan(x);
        in[3] |= x == std::numeric_limits<double>::infinity();
        in[4] |= x == -std::numeric_limits<double>::infinity();
      }
  }
  check_mpi(MPI_Allreduce(info.data(), range.data(), static_cast<int>(info.size()), MPI_INT64_T,
                          MPI_MAX, comm),
            "MPI_Allreduce");

  // Reduction 2: the digits in [lowest, highest] of every field, one message.
  std::vector<std::int64_t> send, sum;
  for (std::size_t f = 0; f < nf; ++f)
    for (std::int64_t k = -range[f * kInfo + 1]; k <= range[f * kInfo]; ++k)
      send.push_back(local[f][static_cast<std::size_t>(k)]);
  sum.resize(send.size());
  if (!send.empty())
    check_mpi(MPI_Allreduce(send.data(), sum.data(), static_cast<int>(send.size()), MPI_INT64_T,
                            MPI_SUM, comm),
              "MPI_Allreduce");

  std::size_t at = 0;
  for (std::size_t f = 0; f < nf; ++f) {
    const std::int64_t* r = &range[f * kInfo];
    Digits g{};
    for (std::int64_t k = -r[1]; k <= r[0]; ++k) g[static_cast<std::size_t>(k)] = sum[at++];
    const double inf = std::numeric_limits<double>::infinity();
    if (r[2] || (r[3] && r[4])) out[f] = std::numeric_limits<double>::quiet_NaN();
    else if (r[3]) out[f] = inf;
    else if (r[4]) out[f] = -inf;
    else out[f] = round_to_double(g);
  }
}

}  // namespace estuary::detail
