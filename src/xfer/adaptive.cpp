// Adaptive stage skipping (paper 001, Sect. 4): the greedy search, its persistence, the
// "butterfly", "adaptive" and "auto" registry entries and AdaptiveRedist.
#include "estuary/adaptive.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
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

// The mask with every stage skipped when it gives the same messages (it then reads "p2p").
std::uint64_t canonical(const ButterflyRouting& routing, std::uint64_t mask) {
  return butterfly::canonical_mask(routing.kernel_stages(), routing.moving_hops(), mask);
}

AdaptiveSearch::Same same_schedule(const ButterflyRouting& routing) {
  return [&routing](std::uint64_t a, std::uint64_t b) { return routing.stage_hops(a) == routing.stage_hops(b); };
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
  std::vector<double> src(static_cast<std::size_t>(plan.src_size())), dst(static_cast<std::size_t>(plan.dst_size()));
  const Field field(src, dst);
  while (!tuner.done()) {
    const std::uint64_t mask = tuner.candidate();
    Exchange ex(routing.schedule(mask), plan.comm(), {Type::f64});
    ex.run({field});  // first touch of its buffers, untimed: the scratch run is extra anyway
    while (!tuner.done() && tuner.candidate() == mask) tuner.record(timed_run(ex, std::span(&field, 1), plan.comm()));
  }
  if (trials) *trials = tuner.trials();
  return canonical(routing, tuner.best());
}

}  // namespace

AdaptiveSearch::AdaptiveSearch(int stages, int repetitions, Same same)
    : stages_(stages), reps_(std::max(1, repetitions)), same_(std::move(same)) {
  all_ = stages > 0 ? (~std::uint64_t{0} >> (64 - stages)) : 0;
  if (stages_ == 0) step_ = stages_ + 2;  // nothing to choose: no kernel means P2P
}

void AdaptiveSearch::record(double seconds) {
  best_now_ = std::min(best_now_, seconds);
  if (++reps_done_ < reps_) return;
  trials_.push_back({candidate_, best_now_});
  if (step_ == 0 || best_now_ < accepted_s_) {
    accepted_ = candidate_;
    accepted_s_ = best_now_;
  }
  advance();
}

// Moves to the next candidate that differs from what was measured.
void AdaptiveSearch::advance() {
  reps_done_ = 0;
  best_now_ = 1e300;
  while (++step_ <= stages_ + 1) {
    candidate_ = step_ <= stages_ ? accepted_ | (std::uint64_t{1} << (step_ - 1)) : all_;
    bool seen = false;
    for (const AdaptiveTrial& t : trials_) seen = seen || same_(t.skip_mask, candidate_);
    if (!seen) return;
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
        tuner(routing.kernel_stages(), options.repetitions, same_schedule(routing)) {
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
    if (!from_cache) choice.trials = tuner.trials();
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
    x.key = key_for(x.plan, bytes);
    if (!x.tuned)
      if (const auto mask = agreed_lookup(x.plan.comm(), x.path, x.key, x.routing.kernel_stages()))
        x.finish(*mask, true);
  }
  if (x.tuned || types != x.tuning_types) {
    // Other field types while tuning go untimed with the candidate: their times are not comparable.
    x.exchange_for(types).run(fields);
    return;
  }
  x.tuner.record(timed_run(x.exchange_for(types), fields, x.plan.comm()));
  if (x.tuner.done()) {
    x.finish(x.tuner.best(), false);
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
