// Recursive-k allreduce against MPI_Allreduce (int64 and min/max exactly, double sums within
// 1e-15 relative) and against a serial reference summed in the documented order (bit for bit),
// for k = 2..8 on every communicator size from 1 to the world size.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "estuary/allreduce.hpp"
#include "estuary/error.hpp"
#include "mpi_test_util.hpp"

using estuary::Op;

namespace {

// Rank r's input: doubles of mixed magnitudes (so that the order of a sum shows in the last
// bits), of both signs when `mixed`, or int64 values far from overflow. Sums get positive
// doubles: without cancellation two summation orders agree to a few units of the last place,
// so 1e-15 relative is a fair bound against MPI's order.
template <class T>
std::vector<T> input(int r, std::size_t n, int salt, bool mixed) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(salt) * 7919 + static_cast<std::uint64_t>(r));
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_same_v<T, double>) {
      std::uniform_real_distribution<double> u(1.0, 2.0);
      x = std::ldexp(u(rng), static_cast<int>(rng() % 21) - 10);
      if (mixed && rng() % 3 == 0) x = -x;
    } else {
      x = static_cast<T>(rng() % (std::uint64_t{1} << 41)) - (std::int64_t{1} << 40);
    }
  }
  return v;
}

template <class T>
T combine(Op op, T a, T b) {
  switch (op) {
    case Op::sum: return a + b;
    case Op::min: return b < a ? b : a;
    case Op::max: return a < b ? b : a;
  }
  return a;
}

// The documented order, computed serially from every rank's input: extras folded into their
// core rank in ascending order, then k-ary groups of core ranks folded in ascending order.
template <class T>
std::vector<T> reference(int q, int k, Op op, std::size_t n, int salt) {
  const bool mixed = op != Op::sum;
  int K = 1;
  while (K <= q / k) K *= k;
  std::vector<std::vector<T>> y;
  for (int c = 0; c < K; ++c) y.push_back(input<T>(c, n, salt, mixed));
  for (int e = K; e < q; ++e) {
    const int c = ((e - (q - K)) % K + K) % K;
    const std::vector<T> x = input<T>(e, n, salt, mixed);
    for (std::size_t i = 0; i < n; ++i) y[c][i] = combine(op, y[c][i], x[i]);
  }
  for (int step = 1; step < K; step *= k) {
    std::vector<std::vector<T>> next(y.size());
    for (int i = 0; i < K; ++i) {
      const int base = i % step + i / (step * k) * (step * k);
      next[i] = y[base];
      for (int t = 1; t < k; ++t)
        for (std::size_t j = 0; j < n; ++j) next[i][j] = combine(op, next[i][j], y[base + t * step][j]);
    }
    y = std::move(next);
  }
  return y[0];
}

template <class T>
MPI_Datatype mpi_type() {
  return std::is_same_v<T, double> ? MPI_DOUBLE : MPI_INT64_T;
}
MPI_Op mpi_op(Op op) { return op == Op::sum ? MPI_SUM : op == Op::min ? MPI_MIN : MPI_MAX; }
const char* op_name(Op op) { return op == Op::sum ? "sum" : op == Op::min ? "min" : "max"; }

// One allreduce on comm (q ranks) checked both ways; appends what is wrong to `why`.
template <class T>
bool check(MPI_Comm comm, int q, int k, Op op, std::size_t n, int salt, std::ostringstream& why) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  const std::vector<T> in = input<T>(r, n, salt, op != Op::sum);
  std::vector<T> out(n, T{-1}), mpi(n);
  estuary::allreduce(in, out, op, comm, k);
  MPI_Allreduce(in.data(), mpi.data(), static_cast<int>(n), mpi_type<T>(), mpi_op(op), comm);
  const std::vector<T> ref = reference<T>(q, k, op, n, salt);
  for (std::size_t i = 0; i < n; ++i) {
    const bool order_free = !std::is_same_v<T, double> || op != Op::sum;
    const bool near_mpi = order_free ? out[i] == mpi[i]
                                     : std::abs(static_cast<double>(out[i] - mpi[i])) <=
                                           1e-15 * std::abs(static_cast<double>(mpi[i]));
    if (!etest::same_bits(out[i], ref[i]) || !near_mpi) {
      why << (std::is_same_v<T, double> ? "double " : "int64 ") << op_name(op) << " q=" << q
          << " k=" << k << " n=" << n << " [" << i << "]: got " << out[i] << ", reference "
          << ref[i] << ", MPI " << mpi[i] << "\n";
      return false;
    }
  }
  return true;
}

// The first q ranks of the world (MPI_COMM_NULL on the others).
MPI_Comm first_ranks(int q) {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, etest::world_rank() < q ? 0 : MPI_UNDEFINED, 0, &c);
  return c;
}

}  // namespace

TEST(Allreduce, EqualsMpiAndDocumentedOrder) {
  const int p = etest::world_size();
  bool ok = true;
  std::ostringstream why;
  for (int q = 1; q <= p; ++q) {
    MPI_Comm c = first_ranks(q);
    if (c != MPI_COMM_NULL) {
      for (int k = 2; k <= 8; ++k)
        for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{300}})
          for (Op op : {Op::sum, Op::min, Op::max}) {
            ok = check<double>(c, q, k, op, n, q * 100 + k, why) && ok;
            ok = check<std::int64_t>(c, q, k, op, n, q * 100 + k, why) && ok;
          }
      MPI_Comm_free(&c);  // also frees the copy allreduce keeps on it
    }
  }
  EXPECT_TRUE(ok) << "rank " << etest::world_rank() << ":\n" << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Allreduce, ExactDoubleSumsEqualMpiBitForBit) {
  // Multiples of 2^-10 below 2^20: every partial sum is exact, so any order gives the same bits.
  const int p = etest::world_size(), r = etest::world_rank();
  std::vector<double> in(64);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = std::ldexp(static_cast<double>((r * 131 + static_cast<int>(i) * 17) % 4096) - 2000, -10);
  bool ok = true;
  for (int k = 2; k <= 8; ++k) {
    std::vector<double> out(in.size()), mpi(in.size());
    estuary::allreduce(in, out, Op::sum, MPI_COMM_WORLD, k);
    MPI_Allreduce(in.data(), mpi.data(), static_cast<int>(in.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ok = ok && std::memcmp(out.data(), mpi.data(), out.size() * sizeof(double)) == 0;
  }
  EXPECT_TRUE(etest::all_ok(ok)) << "on " << p << " ranks";
}

TEST(Allreduce, InPlaceRepeatedAndEmpty) {
  const int p = etest::world_size(), r = etest::world_rank();
  bool ok = true;
  for (int k = 2; k <= 8; ++k)
    for (int it = 0; it < 3; ++it) {
      std::vector<std::int64_t> v(10, r + it), want(10);
      MPI_Allreduce(v.data(), want.data(), 10, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
      estuary::allreduce(v, v, Op::max, MPI_COMM_WORLD, k);
      ok = ok && v == want && v[0] == p - 1 + it;
      std::vector<double> none_in, none_out;
      estuary::allreduce(none_in, none_out, Op::sum, MPI_COMM_WORLD, k);
    }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Allreduce, StagesMatchThePaper) {
  // Pure function: every rank checks every size up to 40. m stages, plus 2 when the size is not
  // a power of k; and every send has its receive at the same stage on the peer.
  bool ok = true;
  std::ostringstream why;
  for (int q = 1; q <= 40; ++q)
    for (int k = 2; k <= 8; ++k) {
      int K = 1, m = 0;
      while (K * k <= q) K *= k, ++m;
      std::vector<std::vector<estuary::AllreduceStage>> all;
      for (int r = 0; r < q; ++r) all.push_back(estuary::recursive_k_stages(r, q, k));
      for (int r = 0; r < q; ++r) {
        if (static_cast<int>(all[r].size()) != m + (q != K ? 2 : 0)) {
          ok = false;
          why << "q=" << q << " k=" << k << " rank " << r << ": " << all[r].size() << " stages\n";
        }
        for (std::size_t s = 0; s < all[r].size(); ++s)
          for (int peer : all[r][s].send_to) {
            const auto& there = all[peer][s];
            const bool expects = there.result_from == r ||
                                 std::find(there.combine.begin(), there.combine.end(), r) != there.combine.end();
            if (!expects) {
              ok = false;
              why << "q=" << q << " k=" << k << ": " << r << " sends to " << peer << " at stage " << s
                  << " unexpected\n";
            }
          }
      }
    }
  EXPECT_TRUE(ok) << why.str();
}

TEST(Allreduce, BadArgumentsThrow) {
  std::vector<double> a(4, 1.0), b(3);
  EXPECT_THROW(estuary::allreduce(a, b, Op::sum, MPI_COMM_WORLD, 2), estuary::Error);
  std::vector<double> c(4);
  EXPECT_THROW(estuary::allreduce(a, c, Op::sum, MPI_COMM_WORLD, 1), estuary::Error);
  EXPECT_THROW(estuary::recursive_k_stages(0, 0, 2), estuary::Error);
}
