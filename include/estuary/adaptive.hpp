// Adaptive transfer (paper 001, Sect. 4, Fig. 13): which butterfly stages to skip, chosen by
// timing the real transfers, and remembered between runs.
//
// AdaptiveRedist starts from the full butterfly. Each run() while tuning moves the caller's
// fields with the current candidate schedule and times it: the slowest rank's time, the
// minimum over `repetitions` runs. Candidates: the full butterfly, then the same with stage
// 0, 1, ... skipped in turn (a skip is kept when it is faster), then P2P (every stage skipped)
// if the greedy pass did not reach it, so the choice is never the slower of butterfly and P2P
// when they are measured apart. Every rank sees the same times, so every rank picks the same
// schedule. No dummy exchange is made: tuning costs nothing beyond the candidates' set-up.
//
// The decision is stored in a cache file (see AdaptiveOptions::cache_file) keyed by the plan's
// fingerprint, the rank count, the bytes per element moved and rank 0's host name; the next run
// with the same key reuses it and does not profile. A foreign or corrupt cache file, or an
// entry recorded on another host, is ignored with a warning on stderr (rank 0).
//
// Registered schedule names (make_schedule, RedistOptions::algorithm, ESTUARY_SCHEDULE):
//   "butterfly"  the full butterfly;
//   "adaptive"   profiles now with a scratch exchange (one field of doubles, zeros) and the
//                same greedy search; no cache;
//   "auto"       the cached decision for (plan, ranks, 8-byte elements, host) if there is one,
//                else "adaptive" and the decision is stored.
// A ScheduleBuilder sees no field buffers, hence the scratch exchange; AdaptiveRedist profiles
// the real data instead and is what a model should use.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/butterfly.hpp"
#include "estuary/decomp.hpp"
#include "estuary/exchange.hpp"
#include "estuary/plan.hpp"

namespace estuary {

struct AdaptiveOptions {
  PlanOptions plan;
  int repetitions = 3;     // timed runs per candidate (>= 1)
  // Empty: ESTUARY_SCHEDULE_CACHE, else $XDG_CACHE_HOME/estuary/schedules.txt or
  // ~/.cache/estuary/schedules.txt. "off": neither read nor write a cache.
  std::string cache_file;
};

struct AdaptiveTrial {
  std::uint64_t skip_mask = 0;
  double seconds = 0;  // slowest rank, minimum over the repetitions
};

struct AdaptiveChoice {
  std::uint64_t skip_mask = 0;
  int kernel_stages = 0;
  bool from_cache = false;
  std::vector<AdaptiveTrial> trials;  // in the order measured (empty when from the cache)
  std::vector<std::uint64_t> pruned;  // candidates the estimate passed over untimed
  bool reused = false;  // the trials are an earlier search's of the same pattern in this process
  double probe_seconds = 0;  // the latency probe (P2P's messages, empty), slowest rank; 0: not run
  // "p2p", "butterfly" or "butterfly-skip-0,2" (the skipped kernel stages).
  std::string name() const;
};

// The greedy search of Fig. 13 as a state machine fed one timing at a time, so that one search
// serves real runs (AdaptiveRedist), the scratch exchange (the registry builders) and the
// simulator (sim::coupling_adaptive, fed simulated times): candidate() is the skip mask to time
// next, record() takes one timing of it (the minimum of `repetitions` timings counts); done()
// once the full butterfly, each kernel stage skipped in turn on top of the best so far, and
// P2P have been timed, candidates giving the same schedule as one already timed (`same`, e.g.
// equal ButterflyRouting::stage_hops) being passed over. No MPI: every rank must record the same
// times (the slowest rank's) to make the same choice.
//
// With prune() set (AdaptiveRedist and the registry builders set it; the simulator does not),
// only candidates that can win are timed: P2P first (the baseline), then each butterfly (the
// full one, then the partial skips) only when `can_win` (given the trials so far and the best
// time) says its estimate could beat the best (AdaptiveRedist and the builders add a latency
// probe to the P2P timing, so that the full butterfly is already judged on an estimate);
// and a butterfly whose first timing is over `give_up` times the best gets no more repetitions
// (P2P gets them all unless its first timings already rule every butterfly out). The skip steps
// build on the fastest butterfly timed, never on P2P.
class AdaptiveSearch {
 public:
  using Same = std::function<bool(std::uint64_t, std::uint64_t)>;  // equal schedules?
  using CanWin = std::function<bool(std::uint64_t mask, const std::vector<AdaptiveTrial>& trials, double best_s)>;
  AdaptiveSearch(int kernel_stages, int repetitions, Same same);
  // Before the first record(). `give_up` <= 1: every candidate gets all its repetitions.
  void prune(CanWin can_win, double give_up = 0);
  bool done() const { return step_ > stages_ + 1; }
  std::uint64_t candidate() const { return candidate_; }
  void record(double seconds);
  std::uint64_t best() const { return best_; }  // the fastest timed so far
  const std::vector<AdaptiveTrial>& trials() const { return trials_; }
  const std::vector<std::uint64_t>& pruned() const { return pruned_; }  // passed over untimed

 private:
  void advance();
  bool butterfly_can_win(double p2p_s) const;
  bool p2p_step(int step) const { return prune_ ? step == 0 : step == stages_ + 1; }
  int stages_, reps_;
  Same same_;
  CanWin can_win_;
  bool prune_ = false;
  double give_up_ = 0;
  std::uint64_t all_ = 0, candidate_ = 0, base_ = 0, best_ = 0;
  int step_ = 0, reps_done_ = 0;
  double best_now_ = 1e300, base_s_ = 1e300, best_s_ = 1e300;
  std::vector<AdaptiveTrial> trials_;
  std::vector<std::uint64_t> pruned_;
};

// The plan's fingerprint: a 128-bit hash of every rank's segments, combined over the ranks
// (collective). Equal plans on equal rank counts give equal fingerprints.
std::vector<std::uint64_t> plan_fingerprint(const Plan& plan);

// The registry builders, callable directly (collective over plan.comm()).
Schedule adaptive_schedule(const Plan& plan, int repetitions = 3);
Schedule auto_schedule(const Plan& plan, const std::string& cache_file = {}, int repetitions = 3);

class AdaptiveRedist {
 public:
  // Collective: the plan, the butterfly routing and the fingerprint. The cache is read at the
  // first run(), when the bytes per element are known.
  AdaptiveRedist(const Decomp& src, const Decomp& dst, MPI_Comm comm, AdaptiveOptions options = {});
  ~AdaptiveRedist();
  AdaptiveRedist(AdaptiveRedist&&) noexcept;
  AdaptiveRedist& operator=(AdaptiveRedist&&) noexcept;

  // Moves the fields (collective). While tuning, with the candidate schedule under test.
  void run(std::span<const Field> fields);
  void run(std::initializer_list<Field> fields) { run(std::span<const Field>(fields)); }

  bool tuned() const;
  const AdaptiveChoice& choice() const;  // meaningful once tuned()
  const Plan& plan() const;
  const ButterflyRouting& routing() const;
  // The schedule the next run() uses.
  const Schedule& schedule() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary
