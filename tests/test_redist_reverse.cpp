// Redist::reverse (the transposed plan): every decomposition pair of the Redist suites, moved
// back from the destination to the source, compared bit for bit with a serial reference built
// from every rank's index lists (which source element owns each global index, which indices some
// destination holds). The forward direction is checked again after the reverse ran.
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/redist.hpp"
#include "mpi_test_util.hpp"

using estuary::Field;
using estuary::Redist;
using estuary::RedistOptions;
using estuary::Type;
using etest::i64;

namespace {

constexpr double kUntouchedD = -1.5e30;
constexpr i64 kUntouchedI = std::numeric_limits<i64>::min() + 5;

// Every rank's local index list, in rank order.
std::vector<std::vector<i64>> gather_indices(const std::vector<i64>& mine) {
  const int p = etest::world_size();
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int k = 1; k < p; ++k) displs[static_cast<std::size_t>(k)] = displs[static_cast<std::size_t>(k) - 1] + counts[static_cast<std::size_t>(k) - 1];
  std::vector<i64> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, MPI_COMM_WORLD);
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (int k = 0; k < p; ++k)
    out[static_cast<std::size_t>(k)].assign(all.begin() + displs[static_cast<std::size_t>(k)],
                                            all.begin() + displs[static_cast<std::size_t>(k)] + counts[static_cast<std::size_t>(k)]);
  return out;
}

// Which local source positions the reverse must write: the position that provides global index
// g forward (the lowest rank listing g, its first occurrence there) when some destination holds
// g. Serial: from every rank's lists.
std::vector<bool> written_by_reverse(const etest::Case& c) {
  const int me = etest::world_rank();
  const auto srcs = gather_indices(c.src.to_indices());
  const auto dsts = gather_indices(c.dst.to_indices());
  std::map<i64, bool> held;
  for (const auto& d : dsts)
    for (i64 g : d) held[g] = true;
  std::map<i64, std::pair<int, std::size_t>> provider;
  for (int r = 0; r < static_cast<int>(srcs.size()); ++r)
    for (std::size_t j = 0; j < srcs[static_cast<std::size_t>(r)].size(); ++j)
      provider.emplace(srcs[static_cast<std::size_t>(r)][j], std::make_pair(r, j));
  const std::vector<i64>& mine = srcs[static_cast<std::size_t>(me)];
  std::vector<bool> out(mine.size(), false);
  for (std::size_t j = 0; j < mine.size(); ++j) {
    const auto& pv = provider.at(mine[j]);
    out[j] = pv.first == me && pv.second == j && held.count(mine[j]) > 0;
  }
  return out;
}

// Forward, reverse, forward again for one pair: two fields (double and int64) each way.
bool run_case(const etest::Case& c, const std::string& algorithm) {
  std::ostringstream why;
  bool ok = true;
  try {
    RedistOptions opt;
    opt.algorithm = algorithm;
    opt.plan = c.options;
    Redist fwd(c.src, c.dst, MPI_COMM_WORLD, opt);
    Redist back = fwd.reverse();
    const std::vector<i64> si = c.src.to_indices(), di = c.dst.to_indices();
    if (back.plan().src_size() != fwd.plan().dst_size() || back.plan().dst_size() != fwd.plan().src_size())
      why << "reverse sizes " << back.plan().src_size() << "/" << back.plan().dst_size() << "\n", ok = false;
    if (back.schedule().algorithm != fwd.schedule().algorithm)
      why << "reverse algorithm " << back.schedule().algorithm << "\n", ok = false;

    // Reverse: destination buffers hold value(g, 2), the source buffers start untouched.
    std::vector<double> dd(di.size()), sd(si.size() + 1, kUntouchedD);
    std::vector<i64> di64(di.size()), si64(si.size() + 1, kUntouchedI);
    for (std::size_t j = 0; j < di.size(); ++j) {
      dd[j] = etest::value<double>(di[j], 2);
      di64[j] = etest::value<i64>(di[j], 2);
    }
    back.run({Field(Type::f64, dd.data(), static_cast<i64>(dd.size()), sd.data(), static_cast<i64>(si.size())),
              Field(Type::i64, di64.data(), static_cast<i64>(di64.size()), si64.data(), static_cast<i64>(si.size()))});
    const std::vector<bool> written = written_by_reverse(c);
    for (std::size_t j = 0; j <= si.size() && ok; ++j) {
      const bool w = j < si.size() && written[j];
      const double want_d = w ? etest::value<double>(si[j], 2) : kUntouchedD;
      const i64 want_i = w ? etest::value<i64>(si[j], 2) : kUntouchedI;
      if (!etest::same_bits(sd[j], want_d) || si64[j] != want_i) {
        why << "reverse: src[" << j << "]" << (j < si.size() ? " (index " + std::to_string(si[j]) + ")" : " (guard)")
            << " = " << sd[j] << " / " << si64[j] << ", want " << want_d << " / " << want_i << "\n";
        ok = false;
      }
    }

    // Forward again, on the same objects: the reverse left it intact.
    std::vector<double> fs(si.size()), fd(di.size() + 1, kUntouchedD);
    for (std::size_t j = 0; j < si.size(); ++j) fs[j] = etest::value<double>(si[j], 3);
    fwd.run({Field(Type::f64, fs.data(), static_cast<i64>(fs.size()), fd.data(), static_cast<i64>(di.size()))});
    for (std::size_t j = 0; j < di.size() && ok; ++j) {
      const bool has = !c.covered || c.covered(di[j]);
      const double want = has ? etest::value<double>(di[j], 3) : c.options.fill_value;
      if (!etest::same_bits(fd[j], want)) {
        why << "forward after reverse: dst[" << j << "] = " << fd[j] << ", want " << want << "\n";
        ok = false;
      }
    }
  } catch (const std::exception& e) {
    why << "threw: " << e.what();
    ok = false;
  }
  EXPECT_TRUE(ok) << c.name << " [" << algorithm << "] on rank " << etest::world_rank() << ": " << why.str();
  return ok;
}

}  // namespace

TEST(RedistReverse, AllPairsP2P) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const etest::Case& c : etest::all_cases(p, r)) {
    const bool ok = run_case(c, "p2p");
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
  }
}

TEST(RedistReverse, EveryAlgorithm) {
  // Every registered algorithm on a rotating third of the pairs (the tuned ones on a sixth).
  const int p = etest::world_size(), r = etest::world_rank();
  const std::vector<etest::Case> cases = etest::all_cases(p, r);
  const std::vector<std::string> algs = estuary::schedule_names();
  for (std::size_t a = 0; a < algs.size(); ++a)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const bool tuned = algs[a] == "adaptive" || algs[a] == "auto";
      if ((i + a) % (tuned ? 6 : 3) != 0) continue;
      const bool ok = run_case(cases[i], algs[a]);
      EXPECT_TRUE(etest::all_ok(ok)) << cases[i].name << " [" << algs[a] << "]";
    }
}

TEST(RedistReverse, TransposeTwiceIsTheForwardPlan) {
  const int p = etest::world_size(), r = etest::world_rank();
  bool ok = true;
  for (const etest::Case& c : etest::index_cases(64, p, r)) {
    estuary::Plan fwd(c.src, c.dst, MPI_COMM_WORLD, c.options);
    const estuary::Plan t = fwd.transposed(), tt = t.transposed();
    auto same = [](const std::vector<estuary::PeerSegments>& a, const std::vector<estuary::PeerSegments>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k].peer != b[k].peer || a[k].segments != b[k].segments) return false;
      return true;
    };
    const bool here = same(t.sends(), fwd.recvs()) && same(t.recvs(), fwd.sends()) && same(tt.sends(), fwd.sends()) &&
                      same(tt.recvs(), fwd.recvs()) && t.missing().empty();
    EXPECT_TRUE(here) << c.name;
    ok = ok && here;
  }
  EXPECT_TRUE(etest::all_ok(ok));
}
