// bench/simgrid_probe — SimGrid's own costs at scale, without estuary's replay around them, to
// compare SimGrid versions (issue 23: Debian's 3.32 against 4.x). Compiles against 3.32 and 4.x:
//
//   build/bench/simgrid_probe --ranks 65536 --mode actors [--stack-kib 8] [--cfg name:value]
//   c++ -O2 -std=c++17 bench/simgrid_probe.cpp -I PREFIX/include -L PREFIX/lib -lsimgrid   # another SimGrid
//   bench/simgrid_41.sh   # builds SimGrid 4.1 from PyPI's source and this probe against it
//
// One recursive-doubling allreduce of 3 doubles (24 B a message; ranks a power of 2) on the most
// cubic torus, links 12.5 GB/s and 100 ns, as sim::simulate sets SimGrid up (CM02, crosstraffic
// off, guard pages off, max-min precision 1e-4). --mode actors: one actor and one mailbox a rank,
// as the replay; --mode actorless: no actors, each rank's next message posted from the completion
// callback of host-to-host comms (Comm::sendto_async), the API a replay without per-rank actors
// would use. One JSON line: simulated time (the same in both modes), resident memory of the
// platform and of the actors (or posted comms), peak RSS, wall and CPU time of the run.
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

double status_mb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atof(line.c_str() + n + 1) / 1024.0;
  return 0;
}

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<sg4::Host*> hosts;
std::vector<sg4::Mailbox*> boxes;
int stages = 0;

void rank_actor(int r) {
  for (int s = 0; s < stages; ++s) {
    sg4::CommPtr c = boxes[static_cast<std::size_t>(r ^ (1 << s))]->put_async(
        reinterpret_cast<void*>(static_cast<std::uintptr_t>(s) + 1), 24);
    boxes[static_cast<std::size_t>(r)]->get<void>();
    c->wait();
  }
}

// Actorless: rank r goes to stage s + 1 once its own message of stage s is delivered and its
// peer's has arrived; the message is a comm from its host to the peer's.
struct Rank {
  int stage = 0, sent = 0, got = 0;
};
std::vector<Rank> ranks;
std::unordered_map<const void*, std::pair<int, sg4::CommPtr>> in_flight;  // by the comm's address
std::vector<sg4::CommPtr> finished;  // kept until the next completion: the signal still holds it
long live = 0, max_live = 0;

void post(int r) {
  const int peer = r ^ (1 << ranks[static_cast<std::size_t>(r)].stage);
  sg4::CommPtr c = sg4::Comm::sendto_async(hosts[static_cast<std::size_t>(r)], hosts[static_cast<std::size_t>(peer)], 24);
  max_live = std::max(max_live, ++live);
  in_flight[c.get()] = {r, c};
}

void advance(int r) {
  Rank& x = ranks[static_cast<std::size_t>(r)];
  while (x.stage < stages && x.sent > x.stage && x.got > x.stage)
    if (++x.stage < stages) post(r);
}

void completed(const void* comm) {
  const auto it = in_flight.find(comm);
  if (it == in_flight.end()) return;
  const int r = it->second.first;
  finished.clear();
  finished.push_back(std::move(it->second.second));
  in_flight.erase(it);
  --live;
  const int peer = r ^ (1 << ranks[static_cast<std::size_t>(r)].stage);
  ++ranks[static_cast<std::size_t>(r)].sent;
  ++ranks[static_cast<std::size_t>(peer)].got;
  advance(r);
  advance(peer);
}

}  // namespace

int main(int argc, char** argv) {
  int p = 4096, stack_kib = 8;
  std::string mode = "actors";
  std::vector<std::string> args = {"simgrid_probe", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                   "--cfg=contexts/guard-size:0", "--cfg=maxmin/precision:1e-4",
                                   "--log=root.thres:critical"};
  bool dry_run = false;  // the options checked and printed, nothing run (test_docs_commands)
  for (int i = 1; i < argc; i += 2) {
    const std::string o = argv[i];
    if (o == "--dry-run") {
      dry_run = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "simgrid_probe: %s needs a value\n", o.c_str());
      return 2;
    }
    const std::string v = argv[i + 1];
    if (o == "--ranks") p = std::atoi(v.c_str());
    else if (o == "--mode") mode = v;
    else if (o == "--stack-kib") stack_kib = std::atoi(v.c_str());
    else if (o == "--cfg") args.push_back("--cfg=" + v);
    else {
      std::fprintf(stderr, "simgrid_probe: unknown option %s (use --ranks, --mode actors|actorless, --stack-kib, --cfg)\n", o.c_str());
      return 2;
    }
  }
  if (p < 2 || (p & (p - 1)) != 0 || (mode != "actors" && mode != "actorless")) {
    std::fprintf(stderr, "simgrid_probe: --ranks must be a power of 2 >= 2, --mode actors or actorless\n");
    return 2;
  }
  if (dry_run) {
    std::printf("ranks=%d\nmode=\"%s\"\nstack-kib=%d\n", p, mode.c_str(), stack_kib);
    return 0;
  }
  args.push_back("--cfg=contexts/stack-size:" + std::to_string(stack_kib));
  std::vector<char*> av;
  for (std::string& a : args) av.push_back(a.data());
  int ac = static_cast<int>(av.size());
  av.push_back(nullptr);
  sg4::Engine engine(&ac, av.data());
  while ((1 << stages) < p) ++stages;
  // The most cubic power-of-2 torus: 2^a x 2^b x 2^c, a >= b >= c.
  const unsigned long c = 1UL << (stages / 3), b = 1UL << ((stages + 1) / 3), a = static_cast<unsigned long>(p) / (b * c);

  const double rss0 = status_mb("VmRSS");
  const auto t0 = std::chrono::steady_clock::now();
  hosts.assign(static_cast<std::size_t>(p), nullptr);
#if SIMGRID_VERSION_MAJOR > 4 || (SIMGRID_VERSION_MAJOR == 4 && SIMGRID_VERSION_MINOR >= 1)
  // 4.1: the cluster's host callback (4.1's wrapper for the netpoint callback below calls an empty
  // function: std::bad_function_call).
  sg4::NetZone* zone =
      engine.get_netzone_root()->add_netzone_torus("torus", {a, b, c}, 12.5e9, 1e-7, sg4::Link::SharingPolicy::SPLITDUPLEX);
  zone->set_host_cb([](sg4::NetZone* z, const std::vector<unsigned long>&, unsigned long id) {
    std::string name = "h";
    name += std::to_string(id);
    sg4::Host* h = z->add_host(name, 1e9)->seal();
    hosts.at(id) = h;
    return h;
  });
#else
  auto leaf = [](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    std::string name = "h";
    name += std::to_string(id);
    sg4::Host* h = zone->create_host(name, 1e9)->seal();
    hosts.at(id) = h;
    return std::make_pair(h->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  sg4::NetZone* zone = sg4::create_torus_zone("torus", engine.get_netzone_root(), {a, b, c}, callbacks, 12.5e9, 1e-7,
                                              sg4::Link::SharingPolicy::SPLITDUPLEX);
#endif
  zone->seal();
  const double rss1 = status_mb("VmRSS");
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu1 = cpu_s();
  if (mode == "actors") {
    boxes.resize(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
      std::string name = "r";
      name += std::to_string(r);
      boxes[static_cast<std::size_t>(r)] = sg4::Mailbox::by_name(name);
#if SIMGRID_VERSION_MAJOR > 4 || (SIMGRID_VERSION_MAJOR == 4 && SIMGRID_VERSION_MINOR >= 1)
      boxes[static_cast<std::size_t>(r)]->set_receiver(hosts[static_cast<std::size_t>(r)]->add_actor(name, [r] { rank_actor(r); }));
#else
      boxes[static_cast<std::size_t>(r)]->set_receiver(
          sg4::Actor::create(name, hosts[static_cast<std::size_t>(r)], [r] { rank_actor(r); }));
#endif
    }
  } else {
#if SIMGRID_VERSION_MAJOR >= 4
    sg4::Comm::on_completion_cb([](const sg4::Comm& comm) { completed(&comm); });
#else
    sg4::Activity::on_completion_cb([](const sg4::Activity& comm) { completed(&comm); });
#endif
    ranks.assign(static_cast<std::size_t>(p), Rank{});
    for (int r = 0; r < p; ++r) post(r);
  }
  const double rss2 = status_mb("VmRSS");
  engine.run();
  const double run_cpu = cpu_s() - cpu1;
  const auto t2 = std::chrono::steady_clock::now();
  int done = p;
  if (mode == "actorless") {
    done = 0;
    for (const Rank& x : ranks) done += x.stage == stages;
  }
  std::printf(
      "{\"bench\":\"simgrid_probe\",\"simgrid\":\"%d.%d.%d\",\"mode\":\"%s\",\"ranks\":%d,\"torus\":\"%lux%lux%lu\","
      "\"stack_kib\":%d,\"ranks_done\":%d,\"simulated_s\":%.9g,\"wall_build_s\":%.3f,\"wall_run_s\":%.3f,"
      "\"cpu_run_s\":%.3f,\"platform_mb\":%.1f,\"actors_mb\":%.1f,\"peak_rss_mb\":%.1f,\"max_live_comms\":%ld}\n",
      SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH, mode.c_str(), p, a, b, c,
      mode == "actors" ? stack_kib : 0, done, sg4::Engine::get_clock(), std::chrono::duration<double>(t1 - t0).count(),
      std::chrono::duration<double>(t2 - t1).count(), run_cpu, rss1 - rss0, rss2 - rss1, status_mb("VmHWM"),
      max_live);
  return done == p ? 0 : 1;
}
