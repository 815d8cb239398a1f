// The shared private communicator (src/common/shared_comm.hpp): one MPI_Comm_dup per user
// communicator whatever the number of Plans, Exchanges and Remaps made on it; objects on one
// communicator with messages in flight at once do not mix them; an object outlives the user's
// communicator.
#include <gtest/gtest.h>
#include <mpi.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/shared_comm.hpp"
#include "estuary/redist.hpp"
#if ESTUARY_TEST_REMAP
#include "estuary/remap.hpp"
#endif
#include "mpi_test_util.hpp"

using estuary::Field;
using estuary::Redist;
using estuary::Type;
using etest::i64;

namespace {

// Checks dst against value(g, salt) for the destination indices; appends the first mismatch.
bool check(const std::vector<double>& dst, const std::vector<i64>& idx, int salt, std::ostringstream& why) {
  for (std::size_t j = 0; j < idx.size(); ++j)
    if (!etest::same_bits(dst[j], etest::value<double>(idx[j], salt))) {
      why << "salt " << salt << ": dst[" << j << "] (index " << idx[j] << ") = " << dst[j] << ", want "
          << etest::value<double>(idx[j], salt) << "\n";
      return false;
    }
  return true;
}

std::vector<double> source_values(const std::vector<i64>& idx, int salt) {
  std::vector<double> v(idx.size());
  for (std::size_t j = 0; j < idx.size(); ++j) v[j] = etest::value<double>(idx[j], salt);
  return v;
}

}  // namespace

TEST(SharedComm, OneDupPerUserCommunicator) {
  const int p = etest::world_size(), r = etest::world_rank();
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &user);
  const std::int64_t before = estuary::detail::shared_comm_dups();
  bool ok = true;
  {
    const i64 n = 97;
    // Two Redists with two executors each, a transposed one, and a Remap (its own plans and
    // executors): 1 + 2 + 2 + ... dups before, one now.
    Redist a(etest::block(n, p, r), etest::cyclic(n, p, r), user);
    Redist b(etest::permuted_block(n, p, r), etest::block(n, p, r), user);
    a.prepare({Type::f64});
    a.prepare({Type::f64, Type::i32});
    b.prepare({Type::f64});
    Redist back = a.reverse();
    back.prepare({Type::f64});
#if ESTUARY_TEST_REMAP
    estuary::Links links;
    for (i64 g = r; g < n; g += p) links.add(g, (g * 7) % n, 0.5);
    estuary::Remap remap(links, etest::block(n, p, r), etest::cyclic(n, p, r), user);
#endif
    ok = estuary::detail::shared_comm_dups() - before == 1;
    EXPECT_EQ(estuary::detail::shared_comm_dups() - before, 1);
    // Every object talks over the same private communicator, which is not the user's.
    ok = ok && a.plan().comm() == b.plan().comm() && back.plan().comm() == a.plan().comm();
    int cmp = MPI_UNEQUAL;
    MPI_Comm_compare(a.plan().comm(), user, &cmp);
    ok = ok && cmp == MPI_CONGRUENT;
    EXPECT_EQ(cmp, MPI_CONGRUENT);
  }
  MPI_Comm_free(&user);
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(SharedComm, TwoRedistsInFlightAtOnce) {
  // Two Redists of the same pair on one communicator: the same peers, the same message sizes.
  // Started and finished in opposite orders on even and odd ranks; with one tag for both, a
  // message of one would land in the other.
  const int p = etest::world_size(), r = etest::world_rank();
  bool ok = true;
  std::ostringstream why;
  for (const etest::Case& c : etest::index_cases(301, p, r)) {
    if (c.covered || c.options.duplicate != estuary::DuplicatePolicy::error) continue;
    Redist a(c.src, c.dst, MPI_COMM_WORLD), b(c.src, c.dst, MPI_COMM_WORLD);
    a.prepare({Type::f64});
    b.prepare({Type::f64});
    const std::vector<i64> si = c.src.to_indices(), di = c.dst.to_indices();
    for (int round = 0; round < 3; ++round) {
      std::vector<double> sa = source_values(si, 1 + round), sb = source_values(si, 10 + round);
      std::vector<double> da(di.size()), db(di.size());
      const Field fa(Type::f64, sa.data(), static_cast<i64>(sa.size()), da.data(), static_cast<i64>(da.size()));
      const Field fb(Type::f64, sb.data(), static_cast<i64>(sb.size()), db.data(), static_cast<i64>(db.size()));
      Redist& first = (r + round) % 2 == 0 ? a : b;
      Redist& second = &first == &a ? b : a;
      first.start({&first == &a ? fa : fb});
      second.start({&second == &a ? fa : fb});
      (r % 2 == 0 ? first : second).finish();
      (r % 2 == 0 ? second : first).finish();
      const bool here = check(da, di, 1 + round, why) && check(db, di, 10 + round, why);
      EXPECT_TRUE(here) << c.name << " round " << round << " rank " << r << ": " << why.str();
      ok = ok && here;
    }
  }
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(SharedComm, RedistOutlivesTheUserCommunicator) {
  const int p = etest::world_size(), r = etest::world_rank();
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &user);
  const i64 n = 50;
  Redist rd(etest::block(n, p, r), etest::reverse_cyclic(n, p, r), user);
  MPI_Comm_free(&user);  // the Redist keeps the private copy alive
  const estuary::Decomp dst = etest::reverse_cyclic(n, p, r);
  std::vector<double> s = source_values(etest::block(n, p, r).to_indices(), 4), d(static_cast<std::size_t>(dst.size()));
  rd.run({Field(Type::f64, s.data(), static_cast<i64>(s.size()), d.data(), static_cast<i64>(d.size()))});
  std::ostringstream why;
  const bool ok = check(d, dst.to_indices(), 4, why);
  EXPECT_TRUE(ok) << why.str();
  EXPECT_TRUE(etest::all_ok(ok));
}
