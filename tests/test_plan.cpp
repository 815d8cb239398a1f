// Plan against an all-to-all oracle: every rank gathers every source and destination index
// list (small sizes), computes serially which (source rank, source offset) feeds each
// destination element, and checks the plan's sends and receives element by element.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/plan.hpp"
#include "estuary/schedule.hpp"
#include "mpi_test_util.hpp"

using estuary::PeerSegments;
using estuary::Plan;
using estuary::Segment;
using estuary::Decomp;
using etest::i64;

namespace {

// Every rank's list, indexed by rank.
std::vector<std::vector<i64>> allgather_lists(const std::vector<i64>& mine, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < p; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<i64> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                 comm);
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    out[static_cast<std::size_t>(r)].assign(all.begin() + displs[static_cast<std::size_t>(r)],
                                            all.begin() + displs[static_cast<std::size_t>(r)] +
                                                counts[static_cast<std::size_t>(r)]);
  return out;
}

// send[d] goes to rank d; returns what each rank sent here, indexed by source rank.
std::vector<std::vector<i64>> exchange_lists(const std::vector<std::vector<i64>>& send, MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  std::vector<int> sc(static_cast<std::size_t>(p)), sd(static_cast<std::size_t>(p)),
      rc(static_cast<std::size_t>(p)), rd(static_cast<std::size_t>(p));
  std::vector<i64> sbuf;
  for (int d = 0; d < p; ++d) {
    sc[static_cast<std::size_t>(d)] = static_cast<int>(send[static_cast<std::size_t>(d)].size());
    sd[static_cast<std::size_t>(d)] = static_cast<int>(sbuf.size());
    sbuf.insert(sbuf.end(), send[static_cast<std::size_t>(d)].begin(), send[static_cast<std::size_t>(d)].end());
  }
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int s = 0; s < p; ++s) {
    rd[static_cast<std::size_t>(s)] = total;
    total += rc[static_cast<std::size_t>(s)];
  }
  std::vector<i64> rbuf(static_cast<std::size_t>(total));
  MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT64_T, rbuf.data(), rc.data(), rd.data(),
                MPI_INT64_T, comm);
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s)
    out[static_cast<std::size_t>(s)].assign(rbuf.begin() + rd[static_cast<std::size_t>(s)],
                                            rbuf.begin() + rd[static_cast<std::size_t>(s)] +
                                                rc[static_cast<std::size_t>(s)]);
  return out;
}

std::vector<i64> expand(const std::vector<Segment>& segs) {
  std::vector<i64> out;
  for (const Segment& s : segs)
    for (i64 k = 0; k < s.count; ++k) out.push_back(s.offset + k * s.stride);
  return out;
}

// Collects the first few problems of one rank.
struct Problems {
  std::ostringstream text;
  int count = 0;
  template <class... A>
  void add(const A&... a) {
    if (count++ < 5) {
      ((text << a), ...);
      text << "\n";
    }
  }
  bool ok() const { return count == 0; }
};

// Checks the plan of `c` against the oracle; returns this rank's verdict.
bool check_plan(const etest::Case& c, MPI_Comm comm) {
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  Problems bad;

  const std::vector<std::vector<i64>> src = allgather_lists(c.src.to_indices(), comm);
  const std::vector<std::vector<i64>> dst = allgather_lists(c.dst.to_indices(), comm);
  const i64 n = c.src.global_size();

  // The oracle: owner of every global index (lowest rank, first local position).
  std::vector<std::pair<int, i64>> owner(static_cast<std::size_t>(n), {-1, 0});
  bool duplicates = false;
  for (int s = 0; s < p; ++s)
    for (std::size_t k = 0; k < src[static_cast<std::size_t>(s)].size(); ++k) {
      auto& o = owner[static_cast<std::size_t>(src[static_cast<std::size_t>(s)][k])];
      if (o.first < 0) o = {s, static_cast<i64>(k)};
      else duplicates = true;
    }
  if (duplicates && c.options.duplicate != estuary::DuplicatePolicy::lowest_rank)
    bad.add("test case has duplicate sources but no lowest_rank policy");

  std::unique_ptr<Plan> plan;
  try {
    plan = std::make_unique<Plan>(c.src, c.dst, comm, c.options);
  } catch (const std::exception& e) {
    bad.add("Plan threw: ", e.what());
  }
  // A plan that threw threw on every rank (the library agrees on errors).
  if (!etest::all_ok(plan != nullptr, comm)) return false;

  EXPECT_EQ(plan->rank(), rank);
  EXPECT_EQ(plan->size(), p);
  EXPECT_EQ(plan->src_size(), c.src.size());
  EXPECT_EQ(plan->dst_size(), c.dst.size());
  EXPECT_EQ(plan->global_size(), n);

  // Shape of the peer lists: sorted by peer, no empty peer, valid offsets.
  auto check_list = [&](const std::vector<PeerSegments>& list, i64 local_size, const char* what) {
    int prev = -1;
    for (const PeerSegments& ps : list) {
      if (ps.peer <= prev) bad.add(what, " not sorted by peer (", prev, " then ", ps.peer, ")");
      if (ps.peer < 0 || ps.peer >= p) bad.add(what, " peer ", ps.peer, " out of range");
      prev = ps.peer;
      i64 sum = 0;
      for (const Segment& s : ps.segments) sum += s.count;
      if (ps.count() != sum) bad.add(what, " count() ", ps.count(), " != segment sum ", sum);
      if (sum <= 0) bad.add(what, " peer ", ps.peer, " listed with no element");
      for (i64 off : expand(ps.segments))
        if (off < 0 || off >= local_size) bad.add(what, " offset ", off, " outside [0, ", local_size, ")");
    }
  };
  check_list(plan->sends(), c.src.size(), "sends");
  check_list(plan->recvs(), c.dst.size(), "recvs");

  // Exchange the expanded send offsets: the receiver checks them against its own receive list.
  std::vector<std::vector<i64>> out(static_cast<std::size_t>(p));
  for (const PeerSegments& ps : plan->sends())
    if (ps.peer >= 0 && ps.peer < p) out[static_cast<std::size_t>(ps.peer)] = expand(ps.segments);
  const std::vector<std::vector<i64>> in = exchange_lists(out, comm);

  std::vector<std::vector<i64>> recv_from(static_cast<std::size_t>(p));
  for (const PeerSegments& ps : plan->recvs())
    if (ps.peer >= 0 && ps.peer < p) recv_from[static_cast<std::size_t>(ps.peer)] = expand(ps.segments);

  const std::vector<i64>& mine = dst[static_cast<std::size_t>(rank)];
  std::vector<int> received(mine.size(), 0);
  for (int s = 0; s < p; ++s) {
    const std::vector<i64>& sent = in[static_cast<std::size_t>(s)];
    const std::vector<i64>& got = recv_from[static_cast<std::size_t>(s)];
    if (sent.size() != got.size()) {
      bad.add("rank ", s, " sends ", sent.size(), " elements here, recvs() expects ", got.size());
      continue;
    }
    const std::vector<i64>& ssrc = src[static_cast<std::size_t>(s)];
    for (std::size_t k = 0; k < sent.size(); ++k) {
      const i64 so = sent[k], dof = got[k];
      if (so < 0 || so >= static_cast<i64>(ssrc.size()) || dof < 0 ||
          dof >= static_cast<i64>(mine.size())) {
        bad.add("pair ", s, "->", rank, " element ", k, " has offsets out of range");
        continue;
      }
      const i64 g = mine[static_cast<std::size_t>(dof)];
      if (ssrc[static_cast<std::size_t>(so)] != g)
        bad.add("pair ", s, "->", rank, " element ", k, ": source holds index ",
                ssrc[static_cast<std::size_t>(so)], ", destination offset ", dof, " wants ", g);
      const auto& o = owner[static_cast<std::size_t>(g)];
      if (o.first != s || o.second != so)
        bad.add("index ", g, " came from rank ", s, " offset ", so, ", oracle says rank ", o.first,
                " offset ", o.second);
      ++received[static_cast<std::size_t>(dof)];
    }
  }

  // Every destination element received exactly once, or listed as missing (fill policy).
  std::vector<int> missing(mine.size(), 0);
  for (i64 off : expand(plan->missing())) {
    if (off < 0 || off >= static_cast<i64>(mine.size())) {
      bad.add("missing offset ", off, " out of range");
      continue;
    }
    ++missing[static_cast<std::size_t>(off)];
  }
  if (c.options.missing == estuary::MissingPolicy::error && !plan->missing().empty())
    bad.add("missing() not empty under MissingPolicy::error");
  for (std::size_t j = 0; j < mine.size(); ++j) {
    const bool has_source = owner[static_cast<std::size_t>(mine[j])].first >= 0;
    if (has_source && (received[j] != 1 || missing[j] != 0))
      bad.add("destination offset ", j, " (index ", mine[j], ") received ", received[j],
              " times, missing ", missing[j], " times; expected once");
    if (!has_source && (received[j] != 0 || missing[j] != 1))
      bad.add("destination offset ", j, " (index ", mine[j], ") has no source: received ",
              received[j], " times, listed missing ", missing[j], " times");
  }

  // Statistics against counts from the oracle.
  std::vector<i64> elements(static_cast<std::size_t>(p), 0);
  std::vector<std::set<int>> peers(static_cast<std::size_t>(p));
  i64 self = 0;
  for (int d = 0; d < p; ++d)
    for (i64 g : dst[static_cast<std::size_t>(d)]) {
      const int s = owner[static_cast<std::size_t>(g)].first;
      if (s < 0) continue;
      ++elements[static_cast<std::size_t>(s)];
      if (s == d) ++self;
      else peers[static_cast<std::size_t>(s)].insert(d);
    }
  i64 mtot = 0, mmax = 0, mmin = 0, etot = 0, emax = 0, emin = 0;
  for (int s = 0; s < p; ++s) {
    const i64 m = static_cast<i64>(peers[static_cast<std::size_t>(s)].size());
    const i64 e = elements[static_cast<std::size_t>(s)];
    mtot += m;
    etot += e;
    mmax = s == 0 ? m : std::max(mmax, m);
    mmin = s == 0 ? m : std::min(mmin, m);
    emax = s == 0 ? e : std::max(emax, e);
    emin = s == 0 ? e : std::min(emin, e);
  }
  const estuary::PlanStats st = plan->stats();
  EXPECT_EQ(st.ranks, p);
  EXPECT_EQ(st.messages_total, mtot);
  EXPECT_EQ(st.messages_max, mmax);
  EXPECT_EQ(st.messages_min, mmin);
  EXPECT_DOUBLE_EQ(st.messages_avg, static_cast<double>(mtot) / p);
  EXPECT_EQ(st.elements_total, etot);
  EXPECT_EQ(st.elements_max, emax);
  EXPECT_EQ(st.elements_min, emin);
  EXPECT_DOUBLE_EQ(st.elements_avg, static_cast<double>(etot) / p);
  EXPECT_EQ(st.self_elements_total, self);
  const bool stats_ok = st.ranks == p && st.messages_total == mtot && st.messages_max == mmax &&
                        st.messages_min == mmin && st.elements_total == etot &&
                        st.elements_max == emax && st.elements_min == emin &&
                        st.self_elements_total == self;
  if (!stats_ok) bad.add("plan stats differ from the oracle");

  // The P2P schedule of the plan carries the same counts.
  const estuary::Schedule sch = estuary::p2p_schedule(*plan);
  const estuary::ScheduleStats ss = sch.stats();
  i64 sent_other = 0, recv_other = 0, msgs_out = 0, msgs_in = 0;
  for (const PeerSegments& ps : plan->sends())
    if (ps.peer != rank) {
      sent_other += ps.count();
      ++msgs_out;
    }
  for (const PeerSegments& ps : plan->recvs())
    if (ps.peer != rank) {
      recv_other += ps.count();
      ++msgs_in;
    }
  i64 self_here = 0;
  for (i64 g : mine) self_here += owner[static_cast<std::size_t>(g)].first == rank ? 1 : 0;
  if (ss.stages != 1 || ss.messages_sent != msgs_out || ss.messages_received != msgs_in ||
      ss.elements_sent != sent_other || ss.elements_received != recv_other ||
      ss.elements_copied != self_here || sch.src_size != c.src.size() || sch.dst_size != c.dst.size())
    bad.add("p2p schedule counts differ from the plan: ", sch.describe());
  if (sch.algorithm != "p2p") bad.add("p2p schedule named '", sch.algorithm, "'");

  EXPECT_TRUE(bad.ok()) << c.name << " on rank " << rank << ":\n" << bad.text.str();
  return bad.ok();
}

}  // namespace

TEST(Plan, MatchesAllToAllOracle) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const etest::Case& c : etest::all_cases(p, r)) {
    SCOPED_TRACE(c.name);
    const bool ok = check_plan(c, MPI_COMM_WORLD);
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
  }
}

TEST(Plan, EveryRankOwnsEverythingLowestRank) {
  // All ranks own every index; rank 0 must provide all of them.
  const int p = etest::world_size(), r = etest::world_rank();
  for (i64 n : {1, 5, 40}) {
    etest::Case c{"all own all n=" + std::to_string(n), Decomp::stripes(n, {{0, n, 1}}),
                  etest::cyclic(n, p, r)};
    c.options.duplicate = estuary::DuplicatePolicy::lowest_rank;
    const bool ok = check_plan(c, MPI_COMM_WORLD);
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
    Plan plan(c.src, c.dst, MPI_COMM_WORLD, c.options);
    // Only rank 0 sends.
    EXPECT_TRUE(etest::all_ok(r == 0 || plan.sends().empty())) << c.name;
  }
}

TEST(Plan, NothingCovered) {
  // No source at all, fill policy: every destination element is missing, nothing moves.
  const int p = etest::world_size(), r = etest::world_rank();
  for (i64 n : {0, 6, 50}) {
    etest::Case c{"nothing covered n=" + std::to_string(n), Decomp::empty(n), etest::halo_block(n, p, r, 2)};
    c.options.missing = estuary::MissingPolicy::fill;
    c.covered = [](i64) { return false; };
    const bool ok = check_plan(c, MPI_COMM_WORLD);
    EXPECT_TRUE(etest::all_ok(ok)) << c.name;
    Plan plan(c.src, c.dst, MPI_COMM_WORLD, c.options);
    EXPECT_TRUE(etest::all_ok(plan.sends().empty() && plan.recvs().empty()));
    const estuary::PlanStats st = plan.stats();
    EXPECT_EQ(st.messages_total, 0);
    EXPECT_EQ(st.elements_total, 0);
  }
}

TEST(Plan, IdentityIsAllSelf) {
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 1000;
  Plan plan(etest::block(n, p, r), etest::block(n, p, r), MPI_COMM_WORLD);
  const estuary::PlanStats st = plan.stats();
  EXPECT_EQ(st.messages_total, 0);
  EXPECT_EQ(st.self_elements_total, n);
  EXPECT_EQ(st.elements_total, n);
  // One contiguous run to itself on each side.
  bool ok = plan.sends().size() == 1 && plan.recvs().size() == 1 && plan.sends()[0].peer == r &&
            plan.sends()[0].segments.size() == 1 && plan.recvs()[0].segments.size() == 1 &&
            plan.sends()[0].segments[0] == (Segment{0, plan.src_size(), 1});
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Plan, ContiguousRunsStayCompact) {
  // Block -> shifted block moves contiguous ranges: at most one segment per peer and side.
  const int p = etest::world_size(), r = etest::world_rank();
  const i64 n = 10007;
  std::vector<i64> w(static_cast<std::size_t>(p));
  for (int k = 0; k < p; ++k) w[static_cast<std::size_t>(k)] = (k % 3) + 1;
  Plan plan(etest::block(n, p, r), etest::range_decomp(n, etest::weighted_range(n, w, r)), MPI_COMM_WORLD);
  bool ok = true;
  for (const PeerSegments& ps : plan.sends()) ok = ok && ps.segments.size() <= static_cast<std::size_t>(p);
  for (const PeerSegments& ps : plan.recvs()) ok = ok && ps.segments.size() <= static_cast<std::size_t>(p);
  EXPECT_TRUE(etest::all_ok(ok)) << "segments per peer exceed the number of directory buckets";
}

TEST(Plan, MoveKeepsCommunicator) {
  const int p = etest::world_size(), r = etest::world_rank();
  Plan a(etest::block(20, p, r), etest::cyclic(20, p, r), MPI_COMM_WORLD);
  const auto sends = a.sends();
  Plan b(std::move(a));
  EXPECT_EQ(b.sends().size(), sends.size());
  EXPECT_NE(b.comm(), MPI_COMM_NULL);
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(b.comm(), MPI_COMM_WORLD, &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);  // duplicated, not the caller's communicator
  const estuary::PlanStats st = b.stats();
  EXPECT_EQ(st.ranks, p);
  Plan c(etest::block(4, p, r), etest::block(4, p, r), MPI_COMM_WORLD);
  c = std::move(b);
  EXPECT_EQ(c.stats().elements_total, 20);
}

TEST(Plan, SubCommunicator) {
  // A plan over half of the ranks: ranks and peers are those of the sub-communicator.
  const int r = etest::world_rank();
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  int hp = 1, hr = 0;
  MPI_Comm_size(half, &hp);
  MPI_Comm_rank(half, &hr);
  const i64 n = 33 + r % 2;
  const etest::Case c{"sub-communicator", etest::permuted_block(n, hp, hr), etest::cyclic(n, hp, hr)};
  const bool ok = check_plan(c, half);
  EXPECT_TRUE(etest::all_ok(ok));
  MPI_Comm_free(&half);
}

namespace {

// The exact segments of this rank's plan, computed serially from every rank's index lists by
// the rule plan.hpp states: a pair's elements travel bucket after bucket (bucket b holds
// [b*n/p, (b+1)*n/p)), in the destination's local order within a bucket, cut greedily into
// arithmetic runs (a run's second element fixes both strides; no run spans two buckets). The
// layout is part of the plan — executors, schedule caches and fingerprints rely on it — so a
// faster set-up must reproduce it segment for segment.
struct Layout {
  std::vector<PeerSegments> sends, recvs;
  std::vector<Segment> missing;
};

Layout serial_layout(const etest::Case& c, MPI_Comm comm) {
  int me = 0, p = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);
  const std::vector<std::vector<i64>> src = allgather_lists(c.src.to_indices(), comm);
  const std::vector<std::vector<i64>> dst = allgather_lists(c.dst.to_indices(), comm);
  const i64 n = c.src.global_size();
  std::vector<std::pair<int, i64>> owner(static_cast<std::size_t>(n), {-1, 0});
  for (int s = 0; s < p; ++s)
    for (std::size_t k = 0; k < src[static_cast<std::size_t>(s)].size(); ++k) {
      auto& o = owner[static_cast<std::size_t>(src[static_cast<std::size_t>(s)][k])];
      if (o.first < 0) o = {s, static_cast<i64>(k)};
    }
  auto bucket = [&](i64 g) {
    int b = 0;
    while (b + 1 < p && (b + 1) * n / p <= g) ++b;
    return b;
  };
  struct Run {
    i64 so, ss, dof, ds, count;
  };
  std::vector<std::vector<Segment>> send(static_cast<std::size_t>(p)), recv(static_cast<std::size_t>(p));
  Layout out;
  for (int d = 0; d < p; ++d)
    for (int b = 0; b < p; ++b) {
      std::vector<std::vector<Run>> runs(static_cast<std::size_t>(p) + 1);  // [p]: no source
      const std::vector<i64>& list = dst[static_cast<std::size_t>(d)];
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (bucket(list[k]) != b) continue;
        const auto [s, so] = owner[static_cast<std::size_t>(list[k])];
        std::vector<Run>& rs = runs[static_cast<std::size_t>(s < 0 ? p : s)];
        const i64 dof = static_cast<i64>(k), sof = s < 0 ? 0 : so;
        if (!rs.empty()) {
          Run& r = rs.back();
          if (r.count == 1 && dof != r.dof) {
            r.ss = sof - r.so;
            r.ds = dof - r.dof;
            r.count = 2;
            continue;
          }
          if (r.count > 1 && sof == r.so + r.count * r.ss && dof == r.dof + r.count * r.ds) {
            ++r.count;
            continue;
          }
        }
        rs.push_back({sof, 1, dof, 1, 1});
      }
      for (int s = 0; s <= p; ++s)
        for (const Run& r : runs[static_cast<std::size_t>(s)]) {
          if (s == p) {
            if (d == me) out.missing.push_back({r.dof, r.count, r.ds});
            continue;
          }
          if (d == me) recv[static_cast<std::size_t>(s)].push_back({r.dof, r.count, r.ds});
          if (s == me) send[static_cast<std::size_t>(d)].push_back({r.so, r.count, r.ss});
        }
    }
  for (int r = 0; r < p; ++r) {
    if (!send[static_cast<std::size_t>(r)].empty()) out.sends.push_back({r, send[static_cast<std::size_t>(r)]});
    if (!recv[static_cast<std::size_t>(r)].empty()) out.recvs.push_back({r, recv[static_cast<std::size_t>(r)]});
  }
  return out;
}

bool same_lists(const std::vector<PeerSegments>& a, const std::vector<PeerSegments>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].peer != b[i].peer || a[i].segments != b[i].segments) return false;
  return true;
}

}  // namespace

TEST(Plan, SegmentsMatchSerialLayout) {
  const int p = etest::world_size(), r = etest::world_rank();
  std::vector<etest::Case> cases = etest::all_cases(p, r);
  // Larger scattered cases, where ranks send single elements rather than runs (both wire
  // forms, and a mix of them across ranks), with holes filled and ghost cells.
  for (i64 n : {2000, 3001}) {
    const std::string at = " n=" + std::to_string(n);
    cases.push_back({"permutation->permutation" + at, etest::permuted_block(n, p, r, 11), etest::permuted_block(n, p, r, 12)});
    cases.push_back({"block->permutation" + at, etest::block(n, p, r), etest::permuted_block(n, p, r, 13)});
    cases.push_back({"permutation->cyclic" + at, etest::permuted_block(n, p, r, 14), etest::cyclic(n, p, r)});
    cases.push_back({r % 2 ? "cyclic->permutation/cyclic mix" + at : "cyclic->cyclic/permutation mix" + at,
                     etest::cyclic(n, p, r), r % 2 ? etest::permuted_block(n, p, r, 15) : etest::cyclic(n, p, r)});
    etest::Case holes{"every third index->permuted halo (fill)" + at,
                      Decomp::stripes(n, {{etest::block_range(n, p, r).first, 0, 1}}), etest::halo_block(n, p, r, 3)};
    {
      std::vector<i64> mine;
      for (i64 g : etest::permuted_block(n, p, r, 16).to_indices())
        if (g % 3 != 0) mine.push_back(g);
      holes.src = Decomp::indices(n, std::move(mine));
    }
    holes.options.missing = estuary::MissingPolicy::fill;
    cases.push_back(std::move(holes));
  }
  for (const etest::Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Layout want = serial_layout(c, MPI_COMM_WORLD);
    const Plan plan(c.src, c.dst, MPI_COMM_WORLD, c.options);
    const bool ok = same_lists(plan.sends(), want.sends) && same_lists(plan.recvs(), want.recvs) &&
                    plan.missing() == want.missing;
    EXPECT_TRUE(etest::all_ok(ok)) << c.name << ": segments differ from the serial layout on some rank";
  }
}
