// An exact sum of doubles, the reference the global-sum tests measure errors against. Written
// independently of src/reduce/reprosum.cpp: values are taken apart with frexp, not by their bits,
// and held as two non-negative big integers (the positive and the negative part) in 64-bit
// limbs, in units of 2^-1074, the smallest subnormal, of which every double is a multiple.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace etest {

class ExactSum {
 public:
  void add(double x) {
    if (!std::isfinite(x)) throw std::invalid_argument("ExactSum takes finite values only");
    if (x == 0) return;
    int e = 0;
    const double m = std::frexp(std::fabs(x), &e);  // |x| = m 2^e, 0.5 <= m < 1
    std::uint64_t mant = static_cast<std::uint64_t>(std::ldexp(m, 53));  // exact, < 2^53
    int shift = e - 53 + 1074;
    if (shift < 0) {  // subnormal: the bits shifted out are zeros
      mant >>= -shift;
      shift = 0;
    }
    add_to(x > 0 ? pos_ : neg_, mant, shift);
  }

  // (S − r), rounded to nearest; r finite.
  double minus(double r) const {
    ExactSum c = *this;
    c.add(-r);
    return c.value();
  }

  // S rounded to nearest, ties to even (the top 64 bits with a sticky bit, rounded once by the
  // integer-to-double conversion).
  double value() const {
    bool negative = false;
    const Mag d = difference(&negative);
    int top = kLimbs - 1;
    while (top >= 0 && d[top] == 0) --top;
    if (top < 0) return 0.0;
    double r = 0;
    if (top == 0) {
      r = std::ldexp(static_cast<double>(d[0]), -1074);
    } else {
      const int lead = 64 - __builtin_clzll(d[top]);  // bits used in the top limb
      const unsigned __int128 w = (static_cast<unsigned __int128>(d[top]) << 64) | d[top - 1];
      std::uint64_t m = static_cast<std::uint64_t>(w >> lead);
      bool sticky = (w & ((static_cast<unsigned __int128>(1) << lead) - 1)) != 0;
      for (int k = 0; k < top - 1; ++k) sticky = sticky || d[k] != 0;
      r = std::ldexp(static_cast<double>(m | (sticky ? 1 : 0)), 64 * (top - 1) + lead - 1074);
    }
    return negative ? -r : r;
  }

  // Whether r is S rounded to nearest with ties to even, decided by exact comparisons of
  // |S − r| with the distances to r's two neighbours (r and its neighbours finite).
  bool is_nearest(double r) const {
    const Mag here = distance(r);
    for (double nb : {std::nextafter(r, INFINITY), std::nextafter(r, -INFINITY)}) {
      if (!std::isfinite(nb)) continue;
      const int c = compare(here, distance(nb));
      if (c > 0) return false;
      if (c == 0) {  // a tie: the even significand wins
        int e = 0;
        const double m = std::frexp(r, &e);
        if (static_cast<std::uint64_t>(std::ldexp(std::fabs(m), 53)) % 2 != 0) return false;
      }
    }
    return true;
  }

 private:
  static constexpr int kLimbs = 36;  // 2304 bits: 2098 for any double, the rest for carries
  using Mag = std::array<std::uint64_t, kLimbs>;

  static void add_to(Mag& a, std::uint64_t mant, int shift) {
    const unsigned __int128 v = static_cast<unsigned __int128>(mant) << (shift % 64);
    unsigned __int128 carry = 0;
    for (int k = shift / 64, j = 0; k < kLimbs && (j < 2 || carry != 0); ++k, ++j) {
      const std::uint64_t part = j == 0 ? static_cast<std::uint64_t>(v)
                                 : j == 1 ? static_cast<std::uint64_t>(v >> 64) : 0;
      const unsigned __int128 s = static_cast<unsigned __int128>(a[k]) + part + carry;
      a[k] = static_cast<std::uint64_t>(s);
      carry = s >> 64;
    }
  }
  static int compare(const Mag& a, const Mag& b) {
    for (int k = kLimbs - 1; k >= 0; --k)
      if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
  }
  static Mag subtract(const Mag& a, const Mag& b) {  // a − b for a >= b
    Mag d{};
    std::uint64_t borrow = 0;
    for (int k = 0; k < kLimbs; ++k) {
      const unsigned __int128 s = static_cast<unsigned __int128>(a[k]) - b[k] - borrow;
      d[k] = static_cast<std::uint64_t>(s);
      borrow = (s >> 64) != 0 ? 1 : 0;
    }
    return d;
  }
  Mag difference(bool* negative) const {  // |pos − neg| and its sign
    *negative = compare(pos_, neg_) < 0;
    return *negative ? subtract(neg_, pos_) : subtract(pos_, neg_);
  }
  Mag distance(double r) const {  // |S − r|
    ExactSum c = *this;
    c.add(-r);
    bool ignored = false;
    return c.difference(&ignored);
  }

  Mag pos_{}, neg_{};
};

}  // namespace etest
