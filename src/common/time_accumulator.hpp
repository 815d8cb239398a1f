// One time accumulation for every part that reduces a field over time: the coupler's LOCTRANS
// (INSTANT, ACCUMUL, AVERAGE, T_MIN, T_MAX between two coupling times, couple/coupling.cpp) and
// the I/O layer's temporal operations (instant, accumulate, average, minimum, maximum over an
// output period, io/output.cpp). Both keep their own storage (the coupler's partial sums go to
// restart files with their counts): the accumulator works on the caller's spans.
//
// Semantics, the same for both parts: the first sample of a period is copied; later samples are
// added (sum, average), or kept when smaller (minimum) or larger (maximum) than the value so far
// (std::min(so_far, x), std::max(so_far, x): a NaN sample after a number leaves the number, a
// NaN first sample stays NaN, and a NaN in a sum or average spreads). Fill values and masks are
// the callers' business: a value given is a value accumulated.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

namespace estuary::detail {

enum class TimeOp { instant, sum, average, minimum, maximum };

class TimeAccumulator {
 public:
  explicit TimeAccumulator(TimeOp op) : op_(op) {}
  TimeOp op() const { return op_; }
  // False for instant: nothing is kept between samples.
  bool accumulates() const { return op_ != TimeOp::instant; }

  // Folds the sample `x` into `acc` (same length); `count` samples are in `acc` already (0: the
  // period starts, `acc` is overwritten).
  void add(std::span<double> acc, std::span<const double> x, long count) const {
    const std::size_t n = acc.size();
    if (count == 0 || op_ == TimeOp::instant) {
      std::copy_n(x.begin(), n, acc.begin());
      return;
    }
    switch (op_) {
      case TimeOp::sum:
      case TimeOp::average:
        for (std::size_t i = 0; i < n; ++i) acc[i] += x[i];
        break;
      case TimeOp::minimum:
        for (std::size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], x[i]);
        break;
      case TimeOp::maximum:
        for (std::size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
        break;
      case TimeOp::instant:
        break;
    }
  }

  // The period's value of `count` (> 0) samples accumulated in `acc`, into `out` (which may be
  // `acc` itself): the average divides by the count, the others are the accumulation.
  void result(std::span<const double> acc, long count, std::span<double> out) const {
    const std::size_t n = acc.size();
    if (op_ == TimeOp::average) {
      const double c = static_cast<double>(count);
      for (std::size_t i = 0; i < n; ++i) out[i] = acc[i] / c;
    } else if (out.data() != acc.data()) {
      std::copy_n(acc.begin(), n, out.begin());
    }
  }

 private:
  TimeOp op_;
};

}  // namespace estuary::detail
