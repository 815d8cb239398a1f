// The SimGrid replay: one S4U actor per rank, one mailbox per rank with the rank's actor as
// permanent receiver (messages flow as soon as they are posted, like MPI's eager sends).
#include <pthread.h>
#include <simgrid/s4u.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <unordered_map>

#include "estuary/error.hpp"
#include "estuary/sim.hpp"

namespace sg4 = simgrid::s4u;

namespace estuary::sim {
namespace {

using i64 = std::int64_t;

// "h17", "r17": appended rather than `"h" + std::to_string(id)`, which GCC 12's -Wrestrict
// misreports once inlined.
std::string named(char prefix, unsigned long id) {
  std::string s(1, prefix);
  s += std::to_string(id);
  return s;
}

std::string format_precision(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

// Builds the platform's zone under the engine's root; returns the hosts by id (rank r runs on
// hosts[r]). Host ids are the ids SimGrid's cluster zones give their leaves.
std::vector<sg4::Host*> build(const Platform& p) {
  std::vector<sg4::Host*> hosts(static_cast<std::size_t>(p.hosts()), nullptr);
  auto leaf = [&hosts](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    sg4::Host* h = zone->create_host(named('h', id), 1e9)->seal();
    hosts.at(id) = h;
    return std::make_pair(h->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  sg4::NetZone* root = sg4::Engine::get_instance()->get_netzone_root();
  sg4::NetZone* zone = nullptr;
  switch (p.topology) {
    case Topology::torus: {
      // A dimension of size 1 adds nothing but a link from a node to itself, which SimGrid
      // declares twice and aborts on: 16x1x1 is the ring of 16.
      std::vector<unsigned long> dims;
      for (unsigned d : p.dims)
        if (d > 1) dims.push_back(d);
      if (dims.empty()) dims.push_back(1);
      zone = sg4::create_torus_zone("torus", root, dims, callbacks, p.bandwidth_Bps, p.latency_s, policy);
      break;
    }
    case Topology::fat_tree:
      zone = sg4::create_fatTree_zone("fattree", root, sg4::FatTreeParams(p.levels, p.down, p.up, p.parallel),
                                      callbacks, p.bandwidth_Bps, p.latency_s, policy);
      break;
    case Topology::dragonfly:
      zone = sg4::create_dragonfly_zone(
          "dragonfly", root,
          sg4::DragonflyParams({p.groups, p.group_links}, {p.chassis, p.chassis_links}, {p.routers, p.router_links},
                               p.nodes),
          callbacks, p.bandwidth_Bps, p.latency_s, policy);
      break;
  }
  zone->seal();
  for (std::size_t i = 0; i < hosts.size(); ++i)
    if (!hosts[i]) throw Error("SimGrid created no host " + std::to_string(i), p.describe());
  return hosts;
}

// Shared by all actors of the one simulation this process runs (actors run one at a time).
struct Run {
  const Pattern* pattern = nullptr;
  std::vector<sg4::Mailbox*> boxes;  // by rank
  std::vector<sg4::Host*> hosts;     // all of the platform's, by id (rank r on hosts[r])
  Routing routing = Routing::minimal;
  // UGAL: bytes posted and not yet delivered on each (directed) link, by messages and legs in
  // flight; every message sent under UGAL adds its bytes to the links of the path it takes when
  // posted and removes them when done.
  std::unordered_map<const sg4::Link*, double> queued;
  i64 messages = 0, bytes = 0, detoured = 0;
  double overhead_s = 0;  // SimOptions::message_overhead_s
  int finished = 0;  // ranks that completed every stage
};
Run* g_run = nullptr;

// A message's payload is its stage + 1 (no data travels; the size is simulated).
void* tag(int stage) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(stage) + 1); }
int stage_of(void* payload) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(payload) - 1); }

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Valiant routing on top of SimGrid's minimal routes: message j of (rank, stage) goes from its
// host to a pseudo-random intermediate host h (neither end; a function of rank, stage and j, so
// runs repeat) and from h to the peer, both legs at once (cut-through: the bytes stream through
// h, so the message takes the slower leg's time). When both legs of a message are done, a 0-byte
// message tells the receiver (its latency stands in for the second leg's). Sends of the stage
// are the notices, added to `notices`; the legs are waited for here.
void send_valiant(Run& run, int rank, int s, const std::vector<Msg>& msgs, std::vector<sg4::CommPtr>& notices) {
  const std::uint64_t n = run.hosts.size();
  std::vector<sg4::CommPtr> legs;
  std::vector<std::size_t> leg_msg;
  std::vector<int> left(msgs.size(), 2);
  sg4::Host* here = run.hosts[static_cast<std::size_t>(rank)];
  for (std::size_t j = 0; j < msgs.size(); ++j) {
    const auto peer = static_cast<std::uint64_t>(msgs[j].peer);
    std::uint64_t h = mix((static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(s) << 20) ^ j) % n;
    while (n > 2 && (h == static_cast<std::uint64_t>(rank) || h == peer)) h = (h + 1) % n;
    const auto bytes = static_cast<std::uint64_t>(msgs[j].bytes);
    legs.push_back(sg4::Comm::sendto_async(here, run.hosts[h], bytes));
    legs.push_back(sg4::Comm::sendto_async(run.hosts[h], run.hosts[peer], bytes));
    leg_msg.insert(leg_msg.end(), {j, j});
  }
  while (!legs.empty()) {
    const auto i = static_cast<std::size_t>(sg4::Comm::wait_any(legs));
    const std::size_t j = leg_msg[i];
    legs[i] = legs.back();
    legs.pop_back();
    leg_msg[i] = leg_msg.back();
    leg_msg.pop_back();
    if (--left[j] == 0) notices.push_back(run.boxes[static_cast<std::size_t>(msgs[j].peer)]->put_async(tag(s), 0));
  }
}

// A route between two hosts as SimGrid routes it (links in order, total latency).
struct Path {
  std::vector<sg4::Link*> links;
  double latency = 0;
};
Path route(sg4::Host* from, sg4::Host* to) {
  Path p;
  from->route_to(to, p.links, &p.latency);
  return p;
}

// The bytes of the messages posted on routes through a link and not yet completed.
double queued_on(const Run& run, const sg4::Link* l) {
  const auto it = run.queued.find(l);
  return it == run.queued.end() ? 0.0 : it->second;
}

// UGAL's congestion estimate of sending `bytes` along `p` now: the path's latency plus the time
// its most loaded link needs to drain what is queued on it and this message.
double estimate(const Run& run, const Path& p, double bytes) {
  double worst = 0;
  for (const sg4::Link* l : p.links) worst = std::max(worst, (queued_on(run, l) + bytes) / l->get_bandwidth());
  return p.latency + worst;
}

void add_load(Run& run, const Path& p, double bytes) {
  for (const sg4::Link* l : p.links) run.queued[l] += bytes;
}

// UGAL on top of SimGrid (see docs/simulator.md): per message, the minimal path or a valiant
// path through the same pseudo-random intermediate host as Routing::valiant, whichever the
// congestion estimate says is faster (minimal on ties). The estimate of a valiant message is its
// slower leg plus the notice's latency (the legs run at once, as in send_valiant). A minimal
// message is the usual mailbox message; a valiant one is sent as in send_valiant. The sender waits
// here for its messages, removing their bytes from the links' queues as each completes.
// UGAL-L, as SST/macro's ugal_router::switch_paths decides at the source switch with what it
// sees there: the queue of the output port each path leaves by (its first link after the host's
// own) times the path's hops, the valiant path's hops being both legs'. Valiant when its product
// is strictly smaller. Congestion further on (a global link, the destination group) is invisible.
bool ugal_local_detours(const Run& run, const Path& direct, const Path& leg1, const Path& leg2) {
  const auto port = [](const Path& p) { return p.links.size() > 1 ? p.links[1] : p.links.front(); };
  if (direct.links.empty() || leg1.links.empty()) return false;
  const double c_min = queued_on(run, port(direct)) * static_cast<double>(direct.links.size());
  const double c_val = queued_on(run, port(leg1)) * static_cast<double>(leg1.links.size() + leg2.links.size());
  return c_val < c_min;
}

void send_ugal(Run& run, int rank, int s, const std::vector<Msg>& msgs, std::vector<sg4::CommPtr>& notices) {
  const std::uint64_t n = run.hosts.size();
  struct Flight {
    std::size_t msg;
    Path path;
    bool mailbox;  // the message itself (minimal), else a valiant leg
  };
  std::vector<sg4::CommPtr> comms;
  std::vector<Flight> flights;
  std::vector<int> left(msgs.size(), 0);
  sg4::Host* here = run.hosts[static_cast<std::size_t>(rank)];
  for (std::size_t j = 0; j < msgs.size(); ++j) {
    const auto peer = static_cast<std::uint64_t>(msgs[j].peer);
    const auto bytes = static_cast<double>(msgs[j].bytes);
    std::uint64_t h = mix((static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(s) << 20) ^ j) % n;
    while (h == static_cast<std::uint64_t>(rank) || h == peer) h = (h + 1) % n;
    Path direct = route(here, run.hosts[peer]);
    Path leg1 = route(here, run.hosts[h]), leg2 = route(run.hosts[h], run.hosts[peer]);
    const bool detour = run.routing == Routing::ugal_local
                            ? ugal_local_detours(run, direct, leg1, leg2)
                            : std::max(estimate(run, leg1, bytes), estimate(run, leg2, bytes)) + direct.latency <
                                  estimate(run, direct, bytes);
    if (detour) {
      ++run.detoured;
      left[j] = 2;
      add_load(run, leg1, bytes);
      add_load(run, leg2, bytes);
      comms.push_back(sg4::Comm::sendto_async(here, run.hosts[h], static_cast<std::uint64_t>(msgs[j].bytes)));
      flights.push_back({j, std::move(leg1), false});
      comms.push_back(sg4::Comm::sendto_async(run.hosts[h], run.hosts[peer], static_cast<std::uint64_t>(msgs[j].bytes)));
      flights.push_back({j, std::move(leg2), false});
    } else {
      left[j] = 1;
      add_load(run, direct, bytes);
      comms.push_back(run.boxes[peer]->put_async(tag(s), static_cast<std::uint64_t>(msgs[j].bytes)));
      flights.push_back({j, std::move(direct), true});
    }
  }
  while (!comms.empty()) {
    const auto i = static_cast<std::size_t>(sg4::Comm::wait_any(comms));
    const Flight f = std::move(flights[i]);
    comms[i] = comms.back();
    comms.pop_back();
    flights[i] = std::move(flights.back());
    flights.pop_back();
    add_load(run, f.path, -static_cast<double>(msgs[f.msg].bytes));
    if (--left[f.msg] == 0 && !f.mailbox)
      notices.push_back(run.boxes[static_cast<std::size_t>(msgs[f.msg].peer)]->put_async(tag(s), 0));
  }
}

void rank_actor(int rank) {
  Run& run = *g_run;
  sg4::Mailbox* mine = run.boxes[static_cast<std::size_t>(rank)];
  RankStage st;
  std::vector<sg4::CommPtr> sends;
  // Messages of later stages that arrived early (a fast peer is already there): (stage, count).
  std::vector<std::pair<int, int>> early;
  const int stages = run.pattern->stages();
  for (int s = 0; s < stages; ++s) {
    run.pattern->stage(rank, s, st);
    const double before = st.compute_s + run.overhead_s * static_cast<double>(st.sends.size());
    if (before > 0) sg4::this_actor::sleep_for(before);
    if (run.routing == Routing::valiant && run.hosts.size() > 2) send_valiant(run, rank, s, st.sends, sends);
    else if ((run.routing == Routing::ugal || run.routing == Routing::ugal_local) && run.hosts.size() > 2)
      send_ugal(run, rank, s, st.sends, sends);
    else
      for (const Msg& m : st.sends)
        sends.push_back(run.boxes[static_cast<std::size_t>(m.peer)]->put_async(tag(s), static_cast<std::uint64_t>(m.bytes)));
    for (const Msg& m : st.sends) {
      ++run.messages;
      run.bytes += m.bytes;
    }
    std::size_t got = 0;
    for (auto it = early.begin(); it != early.end(); ++it)
      if (it->first == s) {
        got = static_cast<std::size_t>(it->second);
        early.erase(it);
        break;
      }
    // Receives match by stage only: within a stage the replay needs no peer matching, since
    // the stage ends when all of its messages are in, whatever their order.
    while (got < st.recvs.size()) {
      const int ms = stage_of(mine->get<void>());
      if (ms == s) {
        ++got;
        continue;
      }
      auto it = std::find_if(early.begin(), early.end(), [ms](const auto& e) { return e.first == ms; });
      if (it == early.end()) early.emplace_back(ms, 1);
      else ++it->second;
    }
    if (run.overhead_s > 0 && !st.recvs.empty())
      sg4::this_actor::sleep_for(run.overhead_s * static_cast<double>(st.recvs.size()));
    sg4::Comm::wait_all(sends);
    sends.clear();
  }
  ++run.finished;
}

double status_mb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atof(line.c_str() + n + 1) / 1024.0;
  return 0;
}

// CPU time of this process (all threads; the replay is its only work), s.
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

SimResult run_here(const Platform& platform, const Pattern& pattern, const SimOptions& opt) {
  using clock = std::chrono::steady_clock;
  SimResult res;
  res.pattern = pattern.name();
  res.platform = platform.describe();
  res.ranks = pattern.ranks();
  res.stages = pattern.stages();
  res.crosstraffic = opt.crosstraffic;
  res.network = opt.network == SimOptions::Network::ib ? "ib" : "cm02";
  res.message_overhead_s = opt.message_overhead_s;
  res.maxmin_precision = opt.maxmin_precision;
  const int stack_kib = opt.stack_kib > 0            ? opt.stack_kib
                        : pattern.ranks() < 20000   ? 64 * kStackScale
                        : pattern.ranks() < 200000 ? 16 * kStackScale
                                                    : kLargeRunStackKib * kStackScale;
  // CM02: plain max-min sharing with no TCP latency or bandwidth correction factors, so a lone
  // message takes exactly the route's latency plus size / bandwidth (an HPC network, not TCP).
  std::vector<std::string> args = {"estuary-sim",
                                   opt.network == SimOptions::Network::ib ? "--cfg=network/model:IB"
                                                                          : "--cfg=network/model:CM02",
                                   "--cfg=network/crosstraffic:" + std::string(opt.crosstraffic ? "1" : "0"),
                                   "--cfg=contexts/stack-size:" + std::to_string(stack_kib),
                                   // One memory mapping per actor otherwise: the default
                                   // vm.max_map_count aborts past ~30 000 actors.
                                   "--cfg=contexts/guard-size:0",
                                   // 1e-5 aborts ("Cannot saturate more a constraint that has no
                                   // active element") on 10^4 concurrent flows of 12.5 GB/s links
                                   // (a 128 x 128 coupler P2P); 1e-4 gave identical times elsewhere.
                                   "--cfg=maxmin/precision:" + format_precision(opt.maxmin_precision),
                                   "--log=root.thres:critical"};
  if (opt.network == SimOptions::Network::ib) {
    // IB builds on SMPI's model, whose default factors scale latency and bandwidth by message
    // size (calibrated for one cluster): neutral here, as in CM02.
    args.push_back("--cfg=smpi/bw-factor:0:1");
    args.push_back("--cfg=smpi/lat-factor:0:1");
  }
  for (const std::string& c : opt.config) args.push_back("--cfg=" + c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  sg4::Engine engine(&argc, argv.data());

  const auto t0 = clock::now();
  const double cpu_start = process_cpu_s();
  const std::vector<sg4::Host*> hosts = build(platform);
  const auto t1 = clock::now();
  res.wall_build_s = std::chrono::duration<double>(t1 - t0).count();
  const double cpu0 = process_cpu_s();  // as wall_run_s: actors created and run
  res.cpu_build_s = cpu0 - cpu_start;

  Run run;
  run.pattern = &pattern;
  run.hosts = hosts;
  run.routing = platform.routing;
  run.overhead_s = opt.message_overhead_s;
  g_run = &run;
  run.boxes.resize(static_cast<std::size_t>(pattern.ranks()));
  for (int r = 0; r < pattern.ranks(); ++r) {
    run.boxes[static_cast<std::size_t>(r)] = sg4::Mailbox::by_name(named('r', static_cast<unsigned long>(r)));
    sg4::ActorPtr a = sg4::Actor::create(named('r', static_cast<unsigned long>(r)), hosts[static_cast<std::size_t>(r)],
                                         [r] { rank_actor(r); });
    run.boxes[static_cast<std::size_t>(r)]->set_receiver(a);
  }
  const double start = sg4::Engine::get_clock();
  engine.run();
  res.cpu_run_s = process_cpu_s() - cpu0;
  res.wall_run_s = std::chrono::duration<double>(clock::now() - t1).count();
  res.simulated_s = sg4::Engine::get_clock() - start;
  res.messages = run.messages;
  res.bytes = run.bytes;
  res.detoured = platform.routing == Routing::valiant && hosts.size() > 2 ? run.messages : run.detoured;
  res.peak_rss_mb = status_mb("VmHWM");
  g_run = nullptr;
  if (run.finished != pattern.ranks())
    throw Error(std::to_string(pattern.ranks() - run.finished) + " rank(s) never finished: the replay deadlocked",
                pattern.name() + " on " + platform.describe(),
                "sends and receives of some stage do not pair up (sim::check_matching names the first)");
  return res;
}

// SimGrid's max-min solver walks the constraints connected to a changed one recursively
// (lmm::System::update_modified_cnst_set_rec), on the thread that runs the engine. With 10^5
// ranks on a fat tree (a halo: 4 x 10^5 flows sharing links) the recursion overflows the 8 MiB
// main stack (signal 11); run_here therefore runs on a thread of its own with a 1 GiB stack
// (address space only: pages are committed as the recursion reaches them).
SimResult run_on_large_stack(const Platform& platform, const Pattern& pattern, const SimOptions& opt) {
  struct Job {
    const Platform* platform;
    const Pattern* pattern;
    const SimOptions* opt;
    SimResult result;
    std::exception_ptr error;
  } job{&platform, &pattern, &opt, {}, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, std::size_t{1} << 30);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        Job& j = *static_cast<Job*>(p);
        try {
          j.result = run_here(*j.platform, *j.pattern, *j.opt);
        } catch (...) {
          j.error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) throw Error("pthread_create failed: " + std::string(std::strerror(rc)), "sim::simulate");
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return job.result;
}

// The child writes the result (or the error text) to a pipe as flat fields.
struct Wire {
  int ok = 0, ranks = 0, stages = 0, crosstraffic = 0;
  double simulated_s = 0, wall_build_s = 0, wall_run_s = 0, cpu_build_s = 0, cpu_run_s = 0, peak_rss_mb = 0;
  i64 messages = 0, bytes = 0, detoured = 0;
  char error[1024] = {};
};

void write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
}

SimResult fork_once(const Platform& platform, const Pattern& pattern, const SimOptions& options, std::string& failed);

}  // namespace

SimResult simulate(const Platform& platform, const Pattern& pattern, const SimOptions& options) {
  if (options.ranks_per_host < 1)
    throw Error("SimOptions::ranks_per_host " + std::to_string(options.ranks_per_host),
                pattern.name() + " on " + platform.describe(), "give 1 or more ranks a host");
  if (options.ranks_per_host == 1 && pattern.ranks() > platform.hosts())
    throw Error("pattern " + pattern.name() + " has " + std::to_string(pattern.ranks()) + " ranks, the platform " +
                    std::to_string(platform.hosts()) + " hosts",
                platform.describe(), "use a larger platform or fewer ranks");
  if (platform.topology == Topology::dragonfly && platform.routers < platform.groups)
    // SimGrid 3.32 routes traffic for group g through router g of chassis 0 of every group
    // (its only global link to g), so it needs a router per group and crashes otherwise.
    throw Error("a dragonfly of " + std::to_string(platform.groups) + " groups with " +
                    std::to_string(platform.routers) + " routers per chassis",
                platform.describe(),
                "SimGrid's dragonfly needs at least as many routers per chassis as groups; swap "
                "chassis and routers or use fewer, larger groups");
  if (options.ranks_per_host > 1) {
    // Every host's ranks replayed as one actor with one flow per host pair and stage (see
    // per_host); results name the ranks, messages and stages are the hosts'.
    SimOptions one = options;
    one.ranks_per_host = 1;
    const std::unique_ptr<Pattern> hosts = per_host(pattern, options.ranks_per_host);
    SimResult r = simulate(platform, *hosts, one);
    r.pattern = pattern.name();
    r.ranks = pattern.ranks();
    r.ranks_per_host = options.ranks_per_host;
    return r;
  }
  if (!options.fork) return run_on_large_stack(platform, pattern, options);

  // SimGrid aborts on the max-min solver's rounding ("Cannot saturate more a constraint that has
  // no active element": a constraint's usage, a sum of ~10^6-10^7 per-flow terms, left at
  // 1e-4 after its flows are gone) on some large exchanges, or crashes on it below ~1e-5. Those
  // are replayed again with the precision raised 100-fold, up to 1 (bytes/s against 10^9-10^10
  // B/s links; usages of 10^6 and more), unless the caller chose the precision; the result says
  // which precision it took. Any end without a result counts, not only SIGABRT and SIGSEGV: under
  // AddressSanitizer the crash is an exit status of 1, and a replay that fails at every
  // precision is still reported, with how its last attempt ended.
  bool chosen = false;
  for (const std::string& c : options.config) chosen = chosen || c.rfind("maxmin/precision:", 0) == 0;
  SimOptions opt = options;
  for (;;) {
    std::string failed;
    SimResult r = fork_once(platform, pattern, opt, failed);
    if (failed.empty()) return r;
    if (chosen || opt.maxmin_precision * 100 > 1.0 + 1e-12)
      throw Error("the simulation process ended without a result (" + failed + ", max-min precision " +
                      format_precision(opt.maxmin_precision) + ")",
                  pattern.name() + " on " + platform.describe(),
                  "a SimGrid abort or crash (its message is above) or a deadlock; run with SimOptions::fork = false to debug");
    opt.maxmin_precision = std::stod(format_precision(opt.maxmin_precision * 100));  // 1e-4, not 1.0000000000000002e-4
    std::fprintf(stderr, "estuary sim: %s: the replay ended without a result (%s); replaying with maxmin/precision %s in case it was the max-min rounding\n",
                 pattern.name().c_str(), failed.c_str(), format_precision(opt.maxmin_precision).c_str());
  }
}

namespace {

// One replay in a forked child. `failed`: empty when the child sent its result, else how it
// ended ("signal 6", "exit 1").
SimResult fork_once(const Platform& platform, const Pattern& pattern, const SimOptions& options, std::string& failed) {
  // The child would print again what the parent has buffered but not yet written.
  std::fflush(nullptr);

  int fds[2];
  if (::pipe(fds) != 0) throw Error("pipe() failed: " + std::string(std::strerror(errno)), "sim::simulate");
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("fork() failed: " + std::string(std::strerror(errno)), "sim::simulate");
  if (pid == 0) {
    ::close(fds[0]);
    Wire w;
    try {
      const SimResult r = run_on_large_stack(platform, pattern, options);
      w.ok = 1;
      w.ranks = r.ranks;
      w.stages = r.stages;
      w.crosstraffic = r.crosstraffic;
      w.simulated_s = r.simulated_s;
      w.wall_build_s = r.wall_build_s;
      w.wall_run_s = r.wall_run_s;
      w.cpu_run_s = r.cpu_run_s;
      w.cpu_build_s = r.cpu_build_s;
      w.peak_rss_mb = r.peak_rss_mb;
      w.messages = r.messages;
      w.bytes = r.bytes;
      w.detoured = r.detoured;
    } catch (const std::exception& e) {
      std::strncpy(w.error, e.what(), sizeof w.error - 1);
    }
    write_all(fds[1], &w, sizeof w);
    ::close(fds[1]);
    // No destructors or atexit handlers of the parent's libraries (MPI among them) in the child.
    ::_exit(0);
  }
  ::close(fds[1]);
  Wire w;
  std::size_t got = 0;
  while (got < sizeof w) {
    const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&w) + got, sizeof w - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got != sizeof w) {
    failed = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                 : "exit " + std::to_string(WEXITSTATUS(status));
    return {};
  }
  if (!w.ok) throw Error(w.error, pattern.name() + " on " + platform.describe());
  SimResult r;
  r.pattern = pattern.name();
  r.platform = platform.describe();
  r.ranks = w.ranks;
  r.stages = w.stages;
  r.crosstraffic = w.crosstraffic != 0;
  r.network = options.network == SimOptions::Network::ib ? "ib" : "cm02";
  r.message_overhead_s = options.message_overhead_s;
  r.simulated_s = w.simulated_s;
  r.wall_build_s = w.wall_build_s;
  r.wall_run_s = w.wall_run_s;
  r.cpu_run_s = w.cpu_run_s;
  r.cpu_build_s = w.cpu_build_s;
  r.peak_rss_mb = w.peak_rss_mb;
  r.messages = w.messages;
  r.bytes = w.bytes;
  r.detoured = w.detoured;
  r.maxmin_precision = options.maxmin_precision;
  return r;
}

}  // namespace
}  // namespace estuary::sim
