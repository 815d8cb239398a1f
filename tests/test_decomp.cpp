// Decomp on one rank: sizes, index lists, runs, boxes in both orders, and construction errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/error.hpp"

using estuary::Decomp;
using estuary::Order;
using estuary::Stripe;
using Idx = std::vector<std::int64_t>;

namespace {

struct LocalRun {
  std::int64_t local, start, count, stride;
};

std::vector<LocalRun> runs_of(const Decomp& d) {
  std::vector<LocalRun> runs;
  d.for_each_run([&](std::int64_t local, std::int64_t start, std::int64_t count,
                     std::int64_t stride) { runs.push_back({local, start, count, stride}); });
  return runs;
}

// Rebuilds the index list from for_each_run, checking that the runs are in local order,
// contiguous in the local buffer and non-empty.
Idx indices_from_runs(const Decomp& d) {
  Idx out;
  for (const LocalRun& r : runs_of(d)) {
    EXPECT_EQ(r.local, static_cast<std::int64_t>(out.size())) << "runs must follow local order";
    EXPECT_GT(r.count, 0) << "a run must not be empty";
    for (std::int64_t k = 0; k < r.count; ++k) out.push_back(r.start + k * r.stride);
  }
  return out;
}

// Checks size(), to_indices() and for_each_run() against the expected list.
void expect_indices(const Decomp& d, const Idx& expected) {
  EXPECT_EQ(d.size(), static_cast<std::int64_t>(expected.size()));
  EXPECT_EQ(d.to_indices(), expected);
  EXPECT_EQ(indices_from_runs(d), expected);
}

// The expected index list of a box, by plain nested loops over up to 3 dimensions (missing
// dimensions have extent 1). Local order follows the global order of `order`.
Idx box_reference(Idx shape, Idx start, Idx count, Order order) {
  while (shape.size() < 3) {
    shape.push_back(1);
    start.push_back(0);
    count.push_back(1);
  }
  Idx out;
  if (order == Order::row_major) {
    for (std::int64_t i = start[0]; i < start[0] + count[0]; ++i)
      for (std::int64_t j = start[1]; j < start[1] + count[1]; ++j)
        for (std::int64_t k = start[2]; k < start[2] + count[2]; ++k)
          out.push_back((i * shape[1] + j) * shape[2] + k);
  } else {
    for (std::int64_t k = start[2]; k < start[2] + count[2]; ++k)
      for (std::int64_t j = start[1]; j < start[1] + count[1]; ++j)
        for (std::int64_t i = start[0]; i < start[0] + count[0]; ++i)
          out.push_back(i + shape[0] * (j + shape[1] * k));
  }
  return out;
}

// Runs `make`, expects an estuary::Error whose message contains every string of `needles`.
template <class F>
void expect_error(F make, const std::vector<std::string>& needles) {
  try {
    make();
    ADD_FAILURE() << "no estuary::Error thrown";
  } catch (const estuary::Error& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "message \"" << msg << "\" lacks \"" << n << "\"";
  }
}

}  // namespace

TEST(Decomp, IndicesBasic) {
  const Idx idx{4, 5, 6, 7, 1, 9, 9, 3, 2, 1, 0};
  const Decomp d = Decomp::indices(10, idx);
  EXPECT_EQ(d.kind(), Decomp::Kind::indices);
  EXPECT_EQ(d.global_size(), 10);
  expect_indices(d, idx);
}

TEST(Decomp, IndicesRunsAreMaximalArithmetic) {
  // 0 1 2 3 | 10 8 6 | 5 | 5 | 20 30 ... : consecutive equal steps merge into one run.
  const Decomp d = Decomp::indices(100, {0, 1, 2, 3, 10, 8, 6, 5, 5, 20, 30, 40, 41});
  const std::vector<LocalRun> runs = runs_of(d);
  expect_indices(d, {0, 1, 2, 3, 10, 8, 6, 5, 5, 20, 30, 40, 41});
  // Sum of run counts equals the size; a repeated index never forms a stride-0 run.
  std::int64_t total = 0;
  for (const LocalRun& r : runs) {
    total += r.count;
    if (r.count > 1) {
      EXPECT_NE(r.stride, 0);
    }
  }
  EXPECT_EQ(total, d.size());
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs[0].start, 0);
  EXPECT_EQ(runs[0].count, 4);
  EXPECT_EQ(runs[0].stride, 1);
  // Consecutive indices cost one call: a long contiguous list is one run.
  Idx longlist;
  for (std::int64_t i = 17; i < 1017; ++i) longlist.push_back(i);
  const Decomp c = Decomp::indices(2000, longlist);
  const std::vector<LocalRun> one = runs_of(c);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].local, 0);
  EXPECT_EQ(one[0].start, 17);
  EXPECT_EQ(one[0].count, 1000);
  EXPECT_EQ(one[0].stride, 1);
  expect_indices(c, longlist);
}

TEST(Decomp, IndicesNegativeStride) {
  const Decomp d = Decomp::indices(50, {40, 37, 34, 31, 9, 8, 7, 6});
  expect_indices(d, {40, 37, 34, 31, 9, 8, 7, 6});
  const std::vector<LocalRun> runs = runs_of(d);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].stride, -3);
  EXPECT_EQ(runs[0].count, 4);
  EXPECT_EQ(runs[1].stride, -1);
  EXPECT_EQ(runs[1].count, 4);
}

TEST(Decomp, IndicesSingleAndEmpty) {
  expect_indices(Decomp::indices(5, {3}), {3});
  expect_indices(Decomp::indices(5, {}), {});
  expect_indices(Decomp::indices(0, {}), {});
}

TEST(Decomp, Stripes) {
  const Decomp d = Decomp::stripes(100, {{10, 3, 1}, {50, 4, 10}, {99, 3, -2}, {0, 0, 1}, {7, 1, 5}});
  EXPECT_EQ(d.kind(), Decomp::Kind::stripes);
  EXPECT_EQ(d.global_size(), 100);
  expect_indices(d, {10, 11, 12, 50, 60, 70, 80, 99, 97, 95, 7});
}

TEST(Decomp, StripesNegativeStrideToZero) {
  // The last element of a backwards stripe may be exactly index 0.
  expect_indices(Decomp::stripes(10, {{9, 10, -1}}), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expect_indices(Decomp::stripes(10, {{8, 5, -2}}), {8, 6, 4, 2, 0});
}

TEST(Decomp, StripesReachingTheEnd) {
  expect_indices(Decomp::stripes(10, {{1, 3, 4}}), {1, 5, 9});
  expect_indices(Decomp::stripes(10, {{0, 10, 1}}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(Decomp, Empty) {
  for (std::int64_t n : {0, 1, 1000}) {
    const Decomp d = Decomp::empty(n);
    EXPECT_EQ(d.global_size(), n);
    expect_indices(d, {});
  }
  // Stripes of count 0 own nothing, wherever they start.
  expect_indices(Decomp::stripes(0, {{0, 0, 1}}), {});
  expect_indices(Decomp::stripes(4, {{4, 0, 1}}), {});
}

TEST(Decomp, Box1D) {
  for (Order order : {Order::row_major, Order::column_major}) {
    const Decomp d = Decomp::box({13}, {4}, {6}, order);
    EXPECT_EQ(d.kind(), Decomp::Kind::box);
    EXPECT_EQ(d.global_size(), 13);
    EXPECT_EQ(d.global_shape(), Idx{13});
    expect_indices(d, {4, 5, 6, 7, 8, 9});
    expect_indices(Decomp::box({13}, {0}, {13}, order), box_reference({13}, {0}, {13}, order));
  }
}

TEST(Decomp, Box2DHandComputed) {
  // A 4 x 5 array; the box rows 1..2, columns 2..4.
  expect_indices(Decomp::box({4, 5}, {1, 2}, {2, 3}, Order::row_major), {7, 8, 9, 12, 13, 14});
  // Column-major: index = i + 4 * j, first dimension fastest.
  expect_indices(Decomp::box({4, 5}, {1, 2}, {2, 3}, Order::column_major),
                 {9, 10, 13, 14, 17, 18});
}

TEST(Decomp, Box2DAndReference) {
  const Idx shape{7, 9};
  for (Order order : {Order::row_major, Order::column_major})
    for (std::int64_t s0 = 0; s0 < 7; s0 += 2)
      for (std::int64_t s1 = 0; s1 < 9; s1 += 3)
        for (std::int64_t c0 = 0; s0 + c0 <= 7; c0 += 2)
          for (std::int64_t c1 = 0; s1 + c1 <= 9; c1 += 4) {
            SCOPED_TRACE("start " + std::to_string(s0) + "," + std::to_string(s1) + " count " +
                         std::to_string(c0) + "," + std::to_string(c1) +
                         (order == Order::row_major ? " row" : " col"));
            const Decomp d = Decomp::box(shape, {s0, s1}, {c0, c1}, order);
            EXPECT_EQ(d.global_size(), 63);
            EXPECT_EQ(d.global_shape(), shape);
            expect_indices(d, box_reference(shape, {s0, s1}, {c0, c1}, order));
          }
}

TEST(Decomp, Box3D) {
  const Idx shape{4, 5, 6};
  const std::vector<std::pair<Idx, Idx>> boxes{
      {{0, 0, 0}, {4, 5, 6}}, {{1, 2, 3}, {2, 3, 3}}, {{3, 4, 5}, {1, 1, 1}},
      {{0, 1, 0}, {4, 1, 6}}, {{2, 0, 1}, {1, 5, 4}}, {{1, 1, 1}, {0, 2, 2}}};
  for (Order order : {Order::row_major, Order::column_major})
    for (const auto& [start, count] : boxes) {
      const Decomp d = Decomp::box(shape, start, count, order);
      EXPECT_EQ(d.global_size(), 120);
      expect_indices(d, box_reference(shape, start, count, order));
    }
  // Hand-computed: row-major index = (i * 5 + j) * 6 + k.
  expect_indices(Decomp::box(shape, {1, 2, 3}, {1, 2, 2}, Order::row_major), {45, 46, 51, 52});
  // Column-major index = i + 4 * (j + 5 * k).
  expect_indices(Decomp::box(shape, {1, 2, 3}, {2, 1, 2}, Order::column_major),
                 {1 + 4 * 17, 2 + 4 * 17, 1 + 4 * 22, 2 + 4 * 22});
}

TEST(Decomp, Box3DRunsCoverFastestDimension) {
  // A box is kept as one run per row of its fastest dimension (or merged, never split finer).
  const Decomp row = Decomp::box({4, 5, 6}, {0, 1, 2}, {3, 2, 4}, Order::row_major);
  EXPECT_LE(runs_of(row).size(), 6u);
  const Decomp col = Decomp::box({4, 5, 6}, {0, 1, 2}, {3, 2, 4}, Order::column_major);
  EXPECT_LE(runs_of(col).size(), 8u);
}

TEST(Decomp, ErrorIndexOutsideRange) {
  expect_error([] { Decomp::indices(10, {0, 1, 10}); }, {"10", "rank"});
  expect_error([] { Decomp::indices(10, {3, 12345, 4}); }, {"12345", "rank"});
  expect_error([] { Decomp::indices(0, {0}); }, {"0", "rank"});
}

TEST(Decomp, ErrorNegativeIndex) {
  expect_error([] { Decomp::indices(10, {1, -3, 2}); }, {"-3", "rank"});
  expect_error([] { Decomp::indices(10, {-1}); }, {"-1", "rank"});
}

TEST(Decomp, ErrorStripeOffTheEnd) {
  // Last element 7 + 3 * 4 = 19 >= 16.
  expect_error([] { Decomp::stripes(16, {{0, 2, 1}, {7, 4, 4}}); }, {"19", "rank"});
  // A start outside the range.
  expect_error([] { Decomp::stripes(16, {{16, 1, 1}}); }, {"16", "rank"});
  // Running backwards below 0: 2 - 3 * 1 = -1.
  expect_error([] { Decomp::stripes(16, {{2, 4, -1}}); }, {"-1", "rank"});
  // Negative start.
  expect_error([] { Decomp::stripes(16, {{-5, 2, 1}}); }, {"-5", "rank"});
}

TEST(Decomp, ErrorBoxOutsideShape) {
  // Dimension 1 runs to 4 + 3 = 7 > 6.
  expect_error([] { Decomp::box({5, 6}, {0, 4}, {2, 3}); }, {"7", "6", "rank"});
  expect_error([] { Decomp::box({5, 6, 7}, {0, 0, 5}, {1, 1, 3}, Order::column_major); },
               {"8", "7", "rank"});
  // Negative start.
  expect_error([] { Decomp::box({5}, {-2}, {1}); }, {"-2", "rank"});
  // Mismatched ranks of shape, start and count.
  expect_error([] { Decomp::box({5, 5}, {0}, {1, 1}); }, {"rank"});
  expect_error([] { Decomp::box({}, {}, {}); }, {"rank"});
}

TEST(Decomp, ErrorIsARuntimeError) {
  try {
    Decomp::indices(3, {7});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("7"), std::string::npos);
  }
}
