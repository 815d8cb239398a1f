// The time accumulator shared by the coupler's LOCTRANS and the I/O layer's temporal operations
// (src/common/time_accumulator.hpp), against a serial reference written from the definitions:
// a sum is the left-to-right sum of the samples, an average that sum over the count, a minimum
// (maximum) the first sample replaced by each later one that compares smaller (larger) -- so a
// NaN sample after a number is skipped, a NaN first sample is kept, and NaN spreads in sums.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/time_accumulator.hpp"

using estuary::detail::TimeAccumulator;
using estuary::detail::TimeOp;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kFill = 1.0e20;  // the I/O layer's fill value: a value like any other here

// The reference value at one point of the samples s[0..k).
double reference(TimeOp op, const std::vector<double>& s) {
  double r = s[0];
  for (std::size_t k = 1; k < s.size(); ++k) {
    const double x = s[k];
    if (op == TimeOp::sum || op == TimeOp::average) r = r + x;
    else if (op == TimeOp::minimum && x < r) r = x;
    else if (op == TimeOp::maximum && x > r) r = x;
    else if (op == TimeOp::instant) r = x;
  }
  return op == TimeOp::average ? r / static_cast<double>(s.size()) : r;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

// Random samples with NaN and fill values among them, over periods of 1 to 7 samples, every
// operation: each period's result equals the reference bit for bit, and the accumulation
// restarts cleanly after each period (count 0 overwrites what the previous period left).
TEST(TimeAccumulator, EqualsSerialReference) {
  std::mt19937_64 rng(18);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  constexpr std::size_t n = 64;
  for (TimeOp op : {TimeOp::instant, TimeOp::sum, TimeOp::average, TimeOp::minimum, TimeOp::maximum}) {
    const TimeAccumulator a(op);
    EXPECT_EQ(a.accumulates(), op != TimeOp::instant);
    std::vector<double> acc(n, 12345.0), out(n);
    for (long len = 1; len <= 7; ++len) {
      std::vector<std::vector<double>> samples(static_cast<std::size_t>(len), std::vector<double>(n));
      for (auto& s : samples)
        for (std::size_t i = 0; i < n; ++i) {
          const int kind = static_cast<int>(rng() % 10);
          s[i] = kind == 0 ? kNaN : kind == 1 ? kFill : u(rng);
        }
      for (long k = 0; k < len; ++k) a.add(acc, samples[static_cast<std::size_t>(k)], k);
      a.result(acc, len, out);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> at;
        for (const auto& s : samples) at.push_back(s[i]);
        ASSERT_TRUE(same(out[i], reference(op, at)))
            << "op " << static_cast<int>(op) << " period of " << len << " point " << i << ": " << out[i]
            << " vs " << reference(op, at);
      }
      // In place (the I/O layer's use): the same values.
      std::vector<double> in_place = acc;
      a.result(in_place, len, in_place);
      for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(same(in_place[i], out[i]));
    }
  }
}

// The NaN rules spelled out on one point each.
TEST(TimeAccumulator, NanRules) {
  auto run = [](TimeOp op, std::vector<double> s) {
    const TimeAccumulator a(op);
    std::vector<double> acc(1), out(1);
    for (std::size_t k = 0; k < s.size(); ++k) a.add(acc, std::vector<double>{s[k]}, static_cast<long>(k));
    a.result(acc, static_cast<long>(s.size()), out);
    return out[0];
  };
  EXPECT_EQ(run(TimeOp::minimum, {3.0, kNaN, 1.0}), 1.0);   // a later NaN is skipped
  EXPECT_EQ(run(TimeOp::maximum, {3.0, kNaN, 1.0}), 3.0);
  EXPECT_TRUE(std::isnan(run(TimeOp::minimum, {kNaN, 1.0})));  // a first NaN stays
  EXPECT_TRUE(std::isnan(run(TimeOp::maximum, {kNaN, 5.0})));
  EXPECT_TRUE(std::isnan(run(TimeOp::sum, {1.0, kNaN, 2.0})));  // NaN spreads in sums
  EXPECT_TRUE(std::isnan(run(TimeOp::average, {1.0, 2.0, kNaN})));
  EXPECT_EQ(run(TimeOp::average, {1.0, 2.0, 6.0}), 3.0);
  EXPECT_EQ(run(TimeOp::sum, {1.0, 2.0, 6.0}), 9.0);
  EXPECT_EQ(run(TimeOp::instant, {1.0, 2.0, 6.0}), 6.0);
}
