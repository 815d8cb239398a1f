// Adaptive stage skipping (paper 001, Sect. 4): the greedy search, its persistence, the
// "butterfly", "adaptive" and "auto" registry entries and AdaptiveRedist.
#include "estuary/adaptive.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "xfer/schedule_cache.hpp"

namespace estuary {
namespace {

using detail::check_mpi;
using i64 = std::int64_t;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {  // splitmix64 of the running hash and v
  std::uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string host_name(MPI_Comm comm) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  check_mpi(MPI_Bcast(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm), "MPI_Bcast");
  std::string h(name);
  for (char& c : h) if (c == ' ' || c == '\t') c = '_';
  return h.empty() ? "unknown" : h;
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "estuary: warning: %s\n", w.c_str());
}

// Rank 0 reads, every rank gets its answer: a decision is only used when it fits this routing.
std::optional<std::uint64_t> agreed_lookup(MPI_Comm comm, const std::string& path, const detail::CacheKey& key,
                                           int stages) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::uint64_t msg[2] = {0, 0};
  if (rank == 0 && !path.empty()) {
    std::vector<std::string> warnings;
    const std::optional<detail::CacheValue> v = detail::cache_read(path, key, warnings);
    if (v && (v->kernel_stages != stages || (stages < 64 && (v->skip_mask >> stages) != 0))) {
      warnings.push_back("schedule cache " + path + " holds a decision for " + std::to_string(v->kernel_stages) +
                         " kernel stages, this plan has " + std::to_string(stages) + "; not trusting it");
    } else if (v) {
      msg[0] = 1;
      msg[1] = v->skip_mask;
    }
    print_warnings(warnings);
  }
  check_mpi(MPI_Bcast(msg, 2, MPI_UINT64_T, 0, comm), "MPI_Bcast");
  if (!msg[0]) return std::nullopt;
  return msg[1];
}

void store(MPI_Comm comm, const std::string& path, const detail::CacheKey& key, std::uint64_t mask, int stages,
           const std::vector<AdaptiveTrial>& trials) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0 || path.empty()) return;
  double secs = trials.empty() ? 0 : 1e300;  // the choice is the fastest trial
  for (const AdaptiveTrial& t : trials) secs = std::min(secs, t.seconds);
  std::vector<std::string> warnings;
  detail::cache_write(path, key, {mask, stages, secs}, warnings);
  print_warnings(warnings);
}

detail::CacheKey key_for(const Plan& plan, int element_bytes) {
  const std::vector<std::uint64_t> fp = plan_fingerprint(plan);
  detail::CacheKey k;
  k.fingerprint[0] = fp[0];
  k.fingerprint[1] = fp[1];
  k.ranks = plan.size();
  k.element_bytes = element_bytes;
  k.host = host_name(plan.comm());
  return k;
}

std::uint64_t p2p_mask(const ButterflyRouting& routing) {  // every kernel stage skipped
  const int stages = routing.kernel_stages();
  return stages > 0 ? ~std::uint64_t{0} >> (64 - stages) : 0;
}

// The mask with every stage skipped when it gives the same messages (it then reads "p2p").
std::uint64_t canonical(const ButterflyRouting& routing, std::uint64_t mask) {
  return butterfly::canonical_mask(routing.kernel_stages(), routing.moving_hops(), mask);
}

AdaptiveSearch::Same same_schedule(const ButterflyRouting& routing) {
  return [&routing](std::uint64_t a, std::uint64_t b) { return routing.stage_hops(a) == routing.stage_hops(b); };
}

// The alpha-beta estimate of a candidate, for AdaptiveSearch::prune: per stage, the busiest
// rank's messages and elements (sent plus received), summed over the stages. Built from every
// rank's flows (one allgather of (receiver, count) pairs) with butterfly::all_messages, the
// simulator's view of ButterflyRouting::schedule, so every rank computes the same numbers and
// prunes alike. The flows, the element bytes and the communicator's members are also the
// pattern's signature under which the trials are remembered (see Trials below).
class Estimate {
 public:
  explicit Estimate(const Plan& plan) : ranks_(plan.size()) {
    std::vector<i64> mine;
    for (const PeerSegments& ps : plan.sends())
      if (ps.peer != plan.rank() && ps.count() > 0) mine.insert(mine.end(), {ps.peer, ps.count()});
    std::vector<int> displs;
    const std::vector<int> counts =
        detail::allgather_counts(static_cast<int>(mine.size()), plan.comm(), displs, "adaptive estimate");
    std::vector<i64> all(static_cast<std::size_t>(displs.back() + counts.back()));
    check_mpi(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(), counts.data(),
                             displs.data(), MPI_INT64_T, plan.comm()),
              "MPI_Allgatherv");
    signature_ = mix(0x7061747465726eULL, static_cast<std::uint64_t>(ranks_));
    for (int r = 0; r < ranks_; ++r)
      for (int k = 0; k < counts[static_cast<std::size_t>(r)]; k += 2) {
        const std::size_t at = static_cast<std::size_t>(displs[static_cast<std::size_t>(r)] + k);
        flows_.push_back({r, static_cast<int>(all[at]), all[at + 1]});
        signature_ = mix(mix(mix(signature_, static_cast<std::uint64_t>(r)), static_cast<std::uint64_t>(all[at])),
                         static_cast<std::uint64_t>(all[at + 1]));
      }
    // Which processes: the same pattern on other ranks of the machine may time differently.
    MPI_Group group, world;
    MPI_Comm_group(plan.comm(), &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> members(static_cast<std::size_t>(ranks_)), in_world(members.size());
    for (int r = 0; r < ranks_; ++r) members[static_cast<std::size_t>(r)] = r;
    MPI_Group_translate_ranks(group, ranks_, members.data(), world, in_world.data());
    for (int w : in_world) signature_ = mix(signature_, static_cast<std::uint64_t>(static_cast<std::int64_t>(w)));
    MPI_Group_free(&group);
    MPI_Group_free(&world);
  }
  std::uint64_t signature() const { return signature_; }

  // The latency term measured before any butterfly is run (collective): P2P's messages, empty,
  // timed as a trial is (the slowest rank, the best of kProbeRounds, each kProbeRepeats
  // exchanges back to back). It is a point with no elements in the fit, so that P2P's first
  // timing alone fixes alpha and beta and the full butterfly, whose one timing (fresh buffers
  // and their first touch, every stage's forwarding) cost more than P2P's three, is run only
  // when its estimate could win. `all_stages` is P2P's skip mask.
  void calibrate(const Plan& plan, std::uint64_t all_stages) {
    constexpr int kProbeTag = 7500;  // a set-up message: below detail::kFirstObjectTag
    constexpr int kProbeRounds = 3, kProbeRepeats = 4;
    std::vector<int> to, from;
    for (const PeerSegments& ps : plan.sends())
      if (ps.peer != plan.rank() && ps.count() > 0) to.push_back(ps.peer);
    for (const PeerSegments& ps : plan.recvs())
      if (ps.peer != plan.rank() && ps.count() > 0) from.push_back(ps.peer);
    std::vector<MPI_Request> reqs(to.size() + from.size());
    char none = 0;
    double best = 1e300;
    for (int round = 0; round < kProbeRounds; ++round) {
      check_mpi(MPI_Barrier(plan.comm()), "MPI_Barrier");
      const double t0 = MPI_Wtime();
      for (int k = 0; k < kProbeRepeats; ++k) {
        std::size_t n = 0;
        for (int r : from)
          check_mpi(MPI_Irecv(&none, 0, MPI_BYTE, r, kProbeTag, plan.comm(), &reqs[n++]), "MPI_Irecv");
        for (int r : to) check_mpi(MPI_Isend(&none, 0, MPI_BYTE, r, kProbeTag, plan.comm(), &reqs[n++]), "MPI_Isend");
        check_mpi(MPI_Waitall(static_cast<int>(n), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      }
      double mine = (MPI_Wtime() - t0) / kProbeRepeats, slowest = 0;
      check_mpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, plan.comm()), "MPI_Allreduce");
      best = std::min(best, slowest);
    }
    probe_ = Probe{load(all_stages).messages, best};
  }
  // An earlier search's probe of the same pattern (the same messages), instead of calibrate().
  void assume_probe(std::uint64_t all_stages, double seconds) {
    if (seconds > 0) probe_ = Probe{load(all_stages).messages, seconds};
  }
  bool calibrated() const { return probe_.messages > 0; }
  double probe_seconds() const { return probe_.seconds; }

  // Whether `mask` could beat `best_s`: alpha and beta >= 0 fitted to the trials (and the
  // latency probe, if calibrate() ran) by least squares, the estimate within kMargin of the
  // best. Without two points every candidate can win.
  bool can_win(std::uint64_t mask, const std::vector<AdaptiveTrial>& trials, double best_s) const {
    double mm = 0, me = 0, ee = 0, mt = 0, et = 0;
    std::vector<Point> points;
    for (const AdaptiveTrial& t : trials) {
      const Load l = load(t.skip_mask);
      points.push_back({l.messages, l.elements, t.seconds});
    }
    if (calibrated()) points.push_back({probe_.messages, 0, probe_.seconds});
    for (const Point& p : points) {
      mm += p.messages * p.messages;
      me += p.messages * p.elements;
      ee += p.elements * p.elements;
      mt += p.messages * p.seconds;
      et += p.elements * p.seconds;
    }
    if (points.size() < 2 || mm <= 0 || ee <= 0) return true;
    double alpha = 0, beta = 0;
    const double det = mm * ee - me * me;
    if (det > 1e-9 * mm * ee) {
      alpha = (mt * ee - et * me) / det;
      beta = (et * mm - mt * me) / det;
    }
    if (!(det > 1e-9 * mm * ee) || alpha < 0 || beta < 0) {
      // One term only: the one that fits better.
      auto residual = [&](double a, double b) {
        double r = 0;
        for (const Point& p : points)
          r += (a * p.messages + b * p.elements - p.seconds) * (a * p.messages + b * p.elements - p.seconds);
        return r;
      };
      const double a_only = std::max(0.0, mt / mm), b_only = std::max(0.0, et / ee);
      if (residual(a_only, 0) <= residual(0, b_only)) { alpha = a_only; beta = 0; }
      else { alpha = 0; beta = b_only; }
    }
    const Load c = load(mask);
    return alpha * c.messages + beta * c.elements < (1 + kMargin) * best_s;
  }

 private:
  static constexpr double kMargin = 0.2;  // the estimate is rough: keep what is nearly as good
  struct Load {
    double messages = 0, elements = 0;
  };
  struct Point {
    double messages, elements, seconds;
  };
  struct Probe {
    double messages = 0, seconds = 0;
  } probe_;
  Load load(std::uint64_t mask) const {
    auto it = loads_.find(mask);
    if (it != loads_.end()) return it->second;
    int stages = 1;
    const std::vector<butterfly::StageMessage> msgs = butterfly::all_messages(ranks_, flows_, mask, &stages);
    Load total;
    std::vector<double> m(static_cast<std::size_t>(ranks_)), e(m.size());
    auto close_stage = [&] {
      total.messages += *std::max_element(m.begin(), m.end());
      total.elements += *std::max_element(e.begin(), e.end());
      std::fill(m.begin(), m.end(), 0.0);
      std::fill(e.begin(), e.end(), 0.0);
    };
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      if (i > 0 && msgs[i].stage != msgs[i - 1].stage) close_stage();
      for (int r : {msgs[i].from, msgs[i].to}) {
        m[static_cast<std::size_t>(r)] += 1;
        e[static_cast<std::size_t>(r)] += static_cast<double>(msgs[i].count);
      }
    }
    if (!msgs.empty()) close_stage();
    return loads_[mask] = total;
  }
  int ranks_;
  std::vector<butterfly::Flow> flows_;
  std::uint64_t signature_ = 0;
  mutable std::map<std::uint64_t, Load> loads_;
};

// A candidate far behind the best after one timing gets no more repetitions.
constexpr double kGiveUp = 2.0;

// The trials (and latency probe) of every search this process made, per (pattern signature,
// bytes per element): a second field with the same pattern replays them instead of timing
// again (every rank holds the same trials, the slowest rank's times, so every rank replays
// alike; a rank that lacks them makes all time afresh).
struct Remembered {
  std::vector<AdaptiveTrial> trials;
  double probe_seconds = 0;
};
class Trials {
 public:
  // This process's search (local: the caller agrees on a hit).
  static std::optional<Remembered> mine(std::uint64_t signature, int bytes) {
    std::lock_guard lock(mutex());
    auto it = memo().find({signature, bytes});
    if (it == memo().end()) return std::nullopt;
    return it->second;
  }
  // Collective: the search when every rank of comm has it.
  static std::optional<Remembered> find(std::uint64_t signature, int bytes, MPI_Comm comm) {
    std::optional<Remembered> mine = Trials::mine(signature, bytes);
    int have = mine ? 1 : 0, all = 0;
    check_mpi(MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (!all) return std::nullopt;
    return mine;
  }
  static void keep(std::uint64_t signature, int bytes, Remembered search) {
    std::lock_guard lock(mutex());
    memo()[{signature, bytes}] = std::move(search);
  }

 private:
  static std::map<std::pair<std::uint64_t, int>, Remembered>& memo() {
    static std::map<std::pair<std::uint64_t, int>, Remembered> m;
    return m;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
};

// Feeds remembered trials to a fresh search; true when they decided it (false: time the rest).
bool replay(AdaptiveSearch& tuner, const std::vector<AdaptiveTrial>& trials, int repetitions) {
  while (!tuner.done()) {
    auto it = std::find_if(trials.begin(), trials.end(),
                           [&](const AdaptiveTrial& t) { return t.skip_mask == tuner.candidate(); });
    if (it == trials.end()) return false;
    for (int k = 0; k < std::max(1, repetitions) && tuner.candidate() == it->skip_mask && !tuner.done(); ++k)
      tuner.record(it->seconds);
  }
  return true;
}

double timed_run(Exchange& ex, std::span<const Field> fields, MPI_Comm comm) {
  check_mpi(MPI_Barrier(comm), "MPI_Barrier");
  const double t0 = MPI_Wtime();
  ex.run(fields);
  double mine = MPI_Wtime() - t0, slowest = 0;
  check_mpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  return slowest;
}

// The search with one field of doubles in scratch buffers (a builder has no others).
std::uint64_t tune_with_scratch(const Plan& plan, const ButterflyRouting& routing, int repetitions,
                                std::vector<AdaptiveTrial>* trials = nullptr) {
  AdaptiveSearch tuner(routing.kernel_stages(), repetitions, same_schedule(routing));
  Estimate estimate(plan);
  tuner.prune([&estimate](std::uint64_t m, const std::vector<AdaptiveTrial>& t, double best) {
    return estimate.can_win(m, t, best);
  }, kGiveUp);
  const int bytes = static_cast<int>(sizeof(double));
  if (const auto known = Trials::find(estimate.signature(), bytes, plan.comm())) {
    estimate.assume_probe(p2p_mask(routing), known->probe_seconds);
    replay(tuner, known->trials, repetitions);
  }
  if (!tuner.done() && !estimate.calibrated()) estimate.calibrate(plan, p2p_mask(routing));
  std::vector<double> src(static_cast<std::size_t>(plan.src_size())), dst(static_cast<std::size_t>(plan.dst_size()));
  const Field field(src, dst);
  const bool timed = !tuner.done();
  while (!tuner.done()) {
    const std::uint64_t mask = tuner.candidate();
    Exchange ex(routing.schedule(mask), plan.comm(), {Type::f64});
    ex.run({field});  // first touch of its buffers, untimed: the scratch run is extra anyway
    while (!tuner.done() && tuner.candidate() == mask) tuner.record(timed_run(ex, std::span(&field, 1), plan.comm()));
  }
  if (timed) Trials::keep(estimate.signature(), bytes, {tuner.trials(), estimate.probe_seconds()});
  if (trials) *trials = tuner.trials();
  return canonical(routing, tuner.best());
}

}  // namespace

AdaptiveSearch::AdaptiveSearch(int stages, int repetitions, Same same)
    : stages_(stages), reps_(std::max(1, repetitions)), same_(std::move(same)) {
  all_ = stages > 0 ? (~std::uint64_t{0} >> (64 - stages)) : 0;
  if (stages_ == 0) step_ = stages_ + 2;  // nothing to choose: no kernel means P2P
}

void AdaptiveSearch::prune(CanWin can_win, double give_up) {
  can_win_ = std::move(can_win);
  prune_ = true;
  give_up_ = give_up;
  if (!done()) candidate_ = all_;  // P2P first: the baseline every other candidate must beat
}

void AdaptiveSearch::record(double seconds) {
  best_now_ = std::min(best_now_, seconds);
  // A butterfly already far behind the best after one timing cannot catch up by its minimum.
  const bool behind = give_up_ > 1 && step_ > 0 && !p2p_step(step_) && best_now_ > give_up_ * best_s_;
  // P2P's timings so far already rule every butterfly out: more would not change the choice.
  auto settled = [&] { return prune_ && p2p_step(step_) && !butterfly_can_win(best_now_); };
  if (++reps_done_ < reps_ && !behind && !settled()) return;
  trials_.push_back({candidate_, best_now_});
  if (step_ == 0 || best_now_ < best_s_) {
    best_ = candidate_;
    best_s_ = best_now_;
  }
  // The skip steps build on the fastest butterfly (without pruning P2P comes last, so this is
  // the fastest of all so far, as in Fig. 13).
  if (!p2p_step(step_) && best_now_ < base_s_) {
    base_ = candidate_;
    base_s_ = best_now_;
  }
  advance();
}

// Whether a butterfly advance() would go on to could beat P2P timed at `p2p_s`: the full one,
// or (should it be pruned, so that no butterfly is timed) each single skip.
bool AdaptiveSearch::butterfly_can_win(double p2p_s) const {
  if (!can_win_) return true;
  std::vector<AdaptiveTrial> trials = trials_;
  trials.push_back({all_, p2p_s});
  for (int s = -1; s < stages_; ++s) {
    const std::uint64_t mask = s < 0 ? 0 : std::uint64_t{1} << s;
    if (!same_(mask, all_) && can_win_(mask, trials, p2p_s)) return true;
  }
  return false;
}

// Moves to the next candidate that differs from what was measured (and, with pruning, can win).
// Steps without pruning: 0 the full butterfly, 1..L stage s - 1 skipped on top of the fastest
// so far, L + 1 P2P. With pruning: 0 P2P, 1 the full butterfly, 2..L + 1 the skips.
void AdaptiveSearch::advance() {
  reps_done_ = 0;
  best_now_ = 1e300;
  while (++step_ <= stages_ + 1) {
    const bool skip_step = prune_ ? step_ >= 2 : step_ <= stages_;
    if (p2p_step(step_)) candidate_ = all_;
    else if (!skip_step) candidate_ = 0;
    else candidate_ = base_ | (std::uint64_t{1} << (prune_ ? step_ - 2 : step_ - 1));
    bool seen = false;
    for (const AdaptiveTrial& t : trials_) seen = seen || same_(t.skip_mask, candidate_);
    if (seen) continue;
    // The full butterfly too: its estimate has two points once calibrate() added the probe.
    if (prune_ && !p2p_step(step_) && can_win_ && !can_win_(candidate_, trials_, best_s_)) {
      pruned_.push_back(candidate_);
      continue;
    }
    return;
  }
}

std::string AdaptiveChoice::name() const {
  const std::uint64_t all = kernel_stages > 0 ? (~std::uint64_t{0} >> (64 - kernel_stages)) : 0;
  if ((skip_mask & all) == all) return "p2p";
  if ((skip_mask & all) == 0) return "butterfly";
  std::string s = "butterfly-skip-";
  for (int b = 0; b < kernel_stages; ++b)
    if ((skip_mask >> b) & 1) {
      if (s.back() != '-') s += ',';
      s += std::to_string(b);
    }
  return s;
}

std::vector<std::uint64_t> plan_fingerprint(const Plan& plan) {
  std::uint64_t h = mix(0x65737475617279ULL, static_cast<std::uint64_t>(plan.rank()));
  auto add = [&h](i64 v) { h = mix(h, static_cast<std::uint64_t>(v)); };
  add(plan.src_size());
  add(plan.dst_size());
  add(static_cast<i64>(plan.options().missing));
  for (const auto* list : {&plan.sends(), &plan.recvs()}) {
    add(-1);
    for (const PeerSegments& ps : *list) {
      add(ps.peer);
      for (const Segment& s : ps.segments) { add(s.offset); add(s.count); add(s.stride); }
    }
  }
  for (const Segment& s : plan.missing()) { add(s.offset); add(s.count); add(s.stride); }
  // Two different reductions of the per-rank hashes (each already depends on the rank).
  std::uint64_t mine[2] = {h, mix(h, 0x5bd1e995)}, all[2] = {0, 0};
  check_mpi(MPI_Allreduce(&mine[0], &all[0], 1, MPI_UINT64_T, MPI_BXOR, plan.comm()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&mine[1], &all[1], 1, MPI_UINT64_T, MPI_SUM, plan.comm()), "MPI_Allreduce");
  return {all[0], all[1]};
}

Schedule adaptive_schedule(const Plan& plan, int repetitions) {
  const ButterflyRouting routing(plan);
  return routing.schedule(tune_with_scratch(plan, routing, repetitions));
}

Schedule auto_schedule(const Plan& plan, const std::string& cache_file, int repetitions) {
  const ButterflyRouting routing(plan);
  const std::string path = cache_file.empty() ? detail::default_cache_path() : cache_file == "off" ? "" : cache_file;
  const detail::CacheKey key = key_for(plan, static_cast<int>(sizeof(double)));
  if (const std::optional<std::uint64_t> mask = agreed_lookup(plan.comm(), path, key, routing.kernel_stages()))
    return routing.schedule(*mask);
  std::vector<AdaptiveTrial> trials;
  const std::uint64_t mask = tune_with_scratch(plan, routing, repetitions, &trials);
  store(plan.comm(), path, key, mask, routing.kernel_stages(), trials);
  return routing.schedule(mask);
}

// Called by the schedule registry as it is built (schedule.cpp).
void register_butterfly_schedules(std::map<std::string, ScheduleBuilder>& into) {
  into["butterfly"] = [](const Plan& plan) { return butterfly_schedule(plan); };
  into["adaptive"] = [](const Plan& plan) { return adaptive_schedule(plan); };
  into["auto"] = [](const Plan& plan) { return auto_schedule(plan); };
}

struct AdaptiveRedist::Impl {
  AdaptiveOptions options;
  Plan plan;
  ButterflyRouting routing;
  AdaptiveSearch tuner;
  Estimate estimate;
  AdaptiveChoice choice;
  bool tuned = false, looked_up = false;
  std::vector<Type> tuning_types;
  std::string path;
  detail::CacheKey key;
  std::shared_ptr<const Schedule> current;                  // the candidate, then the choice
  std::uint64_t current_mask = 0;
  std::map<std::vector<Type>, Exchange> exchanges;          // for `current`

  Impl(const Decomp& src, const Decomp& dst, MPI_Comm comm, AdaptiveOptions o)
      : options(std::move(o)), plan(src, dst, comm, options.plan), routing(plan),
        tuner(routing.kernel_stages(), options.repetitions, same_schedule(routing)), estimate(plan) {
    tuner.prune([this](std::uint64_t m, const std::vector<AdaptiveTrial>& t, double best) {
      return estimate.can_win(m, t, best);
    }, kGiveUp);
    path = options.cache_file.empty()   ? detail::default_cache_path()
           : options.cache_file == "off" ? ""
                                         : options.cache_file;
    choice.kernel_stages = routing.kernel_stages();
    use(tuner.candidate());
    if (tuner.done()) finish(tuner.best(), false);
  }
  void use(std::uint64_t mask) {
    if (current && mask == current_mask) return;
    current = std::make_shared<const Schedule>(routing.schedule(mask));
    current_mask = mask;
    exchanges.clear();
  }
  void finish(std::uint64_t mask, bool from_cache) {
    mask = canonical(routing, mask);
    tuned = true;
    choice.skip_mask = mask;
    choice.from_cache = from_cache;
    if (!from_cache) {
      choice.trials = tuner.trials();
      choice.pruned = tuner.pruned();
      choice.probe_seconds = estimate.probe_seconds();
    }
    use(mask);
  }
  Exchange& exchange_for(const std::vector<Type>& types) {
    auto it = exchanges.find(types);
    if (it == exchanges.end()) it = exchanges.emplace(types, Exchange(current, plan.comm(), types)).first;
    return it->second;
  }
};

AdaptiveRedist::AdaptiveRedist(const Decomp& src, const Decomp& dst, MPI_Comm comm, AdaptiveOptions options)
    : impl_(std::make_unique<Impl>(src, dst, comm, std::move(options))) {}
AdaptiveRedist::~AdaptiveRedist() = default;
AdaptiveRedist::AdaptiveRedist(AdaptiveRedist&&) noexcept = default;
AdaptiveRedist& AdaptiveRedist::operator=(AdaptiveRedist&&) noexcept = default;

void AdaptiveRedist::run(std::span<const Field> fields) {
  Impl& x = *impl_;
  std::vector<Type> types;
  int bytes = 0;
  for (const Field& f : fields) {
    types.push_back(f.type);
    bytes += static_cast<int>(size_of(f.type));
  }
  if (!x.looked_up) {
    // The key needs the bytes per element, known only now; a hit ends tuning before it starts.
    x.looked_up = true;
    x.tuning_types = types;
    if (!x.tuned) {
      // One agreement before any other: whether rank 0 keeps a cache file (only then the
      // plan's fingerprint and the file are looked at), and whether every rank remembers this
      // pattern's trials from an earlier search in this process.
      const std::optional<Remembered> known = Trials::mine(x.estimate.signature(), bytes);
      int flags[2] = {x.plan.rank() == 0 && !x.path.empty() ? 1 : 0, known ? 0 : 1}, all[2] = {0, 0};
      check_mpi(MPI_Allreduce(flags, all, 2, MPI_INT, MPI_MAX, x.plan.comm()), "MPI_Allreduce");
      if (all[0]) {
        x.key = key_for(x.plan, bytes);
        if (const auto mask = agreed_lookup(x.plan.comm(), x.path, x.key, x.routing.kernel_stages()))
          x.finish(*mask, true);
      }
      // The same pattern tuned earlier in this process: its trials decide, no run is timed.
      if (!x.tuned && all[1] == 0) x.estimate.assume_probe(p2p_mask(x.routing), known->probe_seconds);
      if (!x.tuned && all[1] == 0 && replay(x.tuner, known->trials, x.options.repetitions)) {
        x.finish(x.tuner.best(), false);
        x.choice.reused = true;
        store(x.plan.comm(), x.path, x.key, x.choice.skip_mask, x.routing.kernel_stages(), x.choice.trials);
      }
      if (!x.tuned) {
        x.use(x.tuner.candidate());  // a partial replay moved the search on
        if (!x.estimate.calibrated()) x.estimate.calibrate(x.plan, p2p_mask(x.routing));
      }
    }
  }
  if (x.tuned || types != x.tuning_types) {
    // Other field types while tuning go untimed with the candidate: their times are not comparable.
    x.exchange_for(types).run(fields);
    return;
  }
  x.tuner.record(timed_run(x.exchange_for(types), fields, x.plan.comm()));
  if (x.tuner.done()) {
    x.finish(x.tuner.best(), false);
    Trials::keep(x.estimate.signature(), bytes, {x.choice.trials, x.estimate.probe_seconds()});
    store(x.plan.comm(), x.path, x.key, x.choice.skip_mask, x.routing.kernel_stages(), x.choice.trials);
  } else {
    x.use(x.tuner.candidate());
  }
}

bool AdaptiveRedist::tuned() const { return impl_->tuned; }
const AdaptiveChoice& AdaptiveRedist::choice() const { return impl_->choice; }
const Plan& AdaptiveRedist::plan() const { return impl_->plan; }
const ButterflyRouting& AdaptiveRedist::routing() const { return impl_->routing; }
const Schedule& AdaptiveRedist::schedule() const { return *impl_->current; }

}  // namespace estuary
