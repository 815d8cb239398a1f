// Communication simulator: estuary's schedules and paper 004's skeletons replayed on simulated
// torus, fat-tree and dragonfly machines with SimGrid (library estuary_sim; libestuary itself
// does not depend on SimGrid).
//
// A Pattern says, for any rank and stage, which messages (peer, bytes) the rank sends and
// receives. Skeleton patterns compute a rank's stage in closed form when asked, so a replay of
// 10^5 ranks stores no per-rank schedule; real estuary Schedules (small scale) are converted to
// a stored table. simulate() runs every rank as a SimGrid actor on a Platform built from
// parameters and returns the simulated time of the whole pattern.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/butterfly.hpp"
#include "estuary/decomp.hpp"
#include "estuary/plan.hpp"
#include "estuary/remap.hpp"
#include "estuary/schedule.hpp"

namespace estuary::sim {

// One message as the network sees it: the other rank and the simulated size.
struct Msg {
  int peer = 0;
  std::int64_t bytes = 0;
  bool operator==(const Msg&) const = default;
};

// What one rank does in one stage: post all sends and receives, wait for all of them. A rank
// may start stage s+1 while its peers are still in stage s (as the MPI executor does).
struct RankStage {
  std::vector<Msg> sends, recvs;
  double compute_s = 0;  // simulated computation before the stage's messages are posted
  void clear() { sends.clear(); recvs.clear(); compute_s = 0; }
  bool operator==(const RankStage&) const = default;
};

// A communication pattern over ranks() ranks with stages() stages on every rank (a stage may
// be empty for some ranks). stage() must be const and cheap: the replay calls it once per rank
// and stage, while the simulation runs.
class Pattern {
 public:
  virtual ~Pattern() = default;
  virtual std::string name() const = 0;
  virtual int ranks() const = 0;
  virtual int stages() const = 0;
  // Fills `out` (cleared first) with stage s of `rank`.
  virtual void stage(int rank, int s, RankStage& out) const = 0;
};

// ---- real estuary schedules ----

// The stages of one rank's Schedule as messages of element count * bytes_per_element (local
// copies and fills move no network data and are dropped).
std::vector<RankStage> rank_stages(const Schedule& schedule, std::int64_t bytes_per_element);
// Collective over comm: every rank's stages (from rank_stages of its real schedule) on `root`,
// in rank order, for a table_pattern replay of a real MPI run; empty on the other ranks.
std::vector<std::vector<RankStage>> gather_rank_stages(const std::vector<RankStage>& mine, MPI_Comm comm, int root = 0);
// A stored pattern, one stage list per rank (shorter lists are padded with empty stages).
// For real schedules gathered from a small MPI run: memory grows with the messages.
std::unique_ptr<Pattern> table_pattern(std::string name, std::vector<std::vector<RankStage>> per_rank);

// The pattern as the nodes of a machine with `ranks_per_host` ranks a node see it: rank r runs
// on host r / ranks_per_host; a host's stage is its ranks' stage together (the latest
// compute_s), messages between ranks of one host dropped (shared memory: not modelled) and the
// messages from one host to another in a stage merged into one of their summed bytes. A pattern
// over ceil(ranks / ranks_per_host) hosts; `ranks` must outlive it. ranks_per_host = 1: the
// pattern's own stages. What SimOptions::ranks_per_host replays (see docs/simulator.md).
std::unique_ptr<Pattern> per_host(const Pattern& ranks, int ranks_per_host);

// ---- closed-form skeletons of paper 004 (Sect. 3) ----

// All-to-all algorithms of Table 2, with the message placement of estuary's schedules
// (src/xfer/alltoall.cpp): burst, bruck, ring-k ("ring-1", "ring-4", ...).
struct AlltoallAlgo {
  enum class Kind { burst, bruck, ring } kind = Kind::ring;
  int k = 1;  // ring only
  static AlltoallAlgo parse(const std::string& name);  // throws estuary::Error on unknown names
  std::string name() const;
};

// The spectral transposition of Fig. 3: an nx x ny x nz grid of elem_bytes values on cx x cy
// ranks (rank = a + cx*b), moved (a)->(b)->(c)->(d) by `transpositions` (1..3) slab
// transpositions, each a set of simultaneous all-to-alls within rows or columns of the rank
// grid. Block sizes split n over p as gen::block does (rank i gets [i*n/p, (i+1)*n/p)).
struct TranspositionSpec {
  std::int64_t nx = 0, ny = 0, nz = 0;
  int cx = 1, cy = 1;
  AlltoallAlgo algo;
  int transpositions = 3;
  int elem_bytes = 8;
};
std::unique_ptr<Pattern> transposition(const TranspositionSpec& spec);

// The halo exchange of Fig. 4b on a periodic nx x ny grid (nz levels) split over px x py
// ranks (rank = i + px*j): stage 0 sweeps x (left and right halos of `width` columns, from
// neighbours' neighbours when the halo is wider than a subdomain), stage 1 sweeps y over the
// x-extended rows so that corners arrive too. Needs width < nx and width < ny.
struct HaloSpec {
  std::int64_t nx = 0, ny = 0, nz = 1;
  int px = 1, py = 1;
  std::int64_t width = 1;
  int elem_bytes = 8;
};
std::unique_ptr<Pattern> halo(const HaloSpec& spec);

// `repeat` recursive-k allreduces of `doubles` values (GCR: 2N allreduces), with the stages of
// estuary's executor (recursive_k_stages in allreduce.hpp); k = 2 is recursive doubling.
struct AllreduceSpec {
  int ranks = 1;
  int k = 2;
  int doubles = 3;
  int repeat = 1;
};
std::unique_ptr<Pattern> allreduce(const AllreduceSpec& spec);

// A coupler exchange with the P2P schedule: `points` values block-distributed over the
// src_ranks ranks [0, src_ranks) of one component go to the block distribution over the
// dst_ranks ranks [src_ranks, src_ranks + dst_ranks) of the other, in one stage.
struct CouplingSpec {
  std::int64_t points = 0;
  int src_ranks = 1, dst_ranks = 1;
  int elem_bytes = 8;
  int fields = 1;
  // 0: the destination is block-distributed. c > 0: destination point p belongs to destination
  // rank (p / c) mod dst_ranks (a grid numbered in another order: a source block of
  // dst_ranks * c points or more meets every destination rank, many small messages).
  std::int64_t dst_chunk = 0;
};
// Closed form for block -> block; a stored table (coupling_butterfly's P2P) for dst_chunk > 0.
std::unique_ptr<Pattern> coupling_p2p(const CouplingSpec& spec);
// Every flow of the exchange: f(source rank, destination index 0..dst_ranks-1, bytes).
void coupling_flows(const CouplingSpec& spec, const std::function<void(int, int, std::int64_t)>& f);

// Every rank's stages of estuary's butterfly schedule (ButterflyRouting(plan).schedule(skip_mask)
// on each rank) for a plan with these flows between `ranks` ranks, computed in one process by
// the engine's own routing (butterfly::all_messages: its kernel size, mappings, pairing, hosts
// and stage grouping), messages of count * bytes_per_element bytes. Stored as a table.
std::unique_ptr<Pattern> butterfly_pattern(std::string name, int ranks, std::span<const butterfly::Flow> flows,
                                           std::uint64_t skip_mask, std::int64_t bytes_per_element);

// ---- plans without the ranks ----

// The flows of the Plan that `ranks` ranks would build from src(r) -> dst(r) (r = 0 .. ranks-1),
// computed in one process: per (source rank, destination rank) the elements the plan moves,
// a rank's part to itself dropped (a local copy), sorted by (from, to). Equal, flow for flow,
// to the per-peer counts of the real Plan's sends() and recvs() (test_sim_schedule). Faults are
// the Plan's (an index with two source ranks under DuplicatePolicy::error, a destination index
// with no source under MissingPolicy::error), thrown as estuary::Error. Memory: 4 bytes per
// global index and 8 per rank, plus the flows; time: one pass over every rank's indices.
std::vector<butterfly::Flow> plan_flows(int ranks, const std::function<Decomp(int)>& src,
                                        const std::function<Decomp(int)>& dst, const PlanOptions& options = {});
// The P2P schedule of every rank for these flows (one stage, messages in peer order).
std::unique_ptr<Pattern> p2p_pattern(std::string name, int ranks, std::span<const butterfly::Flow> flows,
                                     std::int64_t bytes_per_element);

// ---- the coupler's Remap without the ranks ----

// One exchange of a Remap run: "gather" (source values to the ranks holding the links) or
// "after" (results or partial sums to the destination's ranks), as Remap::exchanges() names
// them, with the flows of its Plan (elements per (from, to), a rank's part to itself dropped,
// sorted by (from, to)).
struct RemapExchangeFlows {
  std::string name;
  std::vector<butterfly::Flow> flows;
};
// The exchanges, in order, that a Remap(links, src(r), dst(r), comm of `ranks` ranks, options)
// runs, computed in one process: links (rows[k] <- cols[k], global destination and source
// points) routed as the Remap routes them, with Remap's own decisions (src/remap/
// remap_layout.hpp: the working ranks, the rows or columns each takes, each exchange's Plan
// options) for options.location and options.order. Equal, message for message, to the real
// Remap's schedules (test_sim_remap). Throws estuary::Error for links outside the grids or using
// source points no rank holds. Memory: O(points + links + flows).
std::vector<RemapExchangeFlows> remap_flows(int ranks, const std::function<Decomp(int)>& src,
                                            const std::function<Decomp(int)>& dst, std::span<const std::int64_t> rows,
                                            std::span<const std::int64_t> cols, const RemapOptions& options);

// The coupler exchange with estuary's "butterfly" schedule: butterfly_pattern of the exchange's
// flows (source i is rank i, destination j rank src_ranks + j). Bit s of skip_mask skips kernel
// stage s; with every stage skipped it is P2P. Named "coupling " + AdaptiveChoice::name().
std::unique_ptr<Pattern> coupling_butterfly(const CouplingSpec& spec, std::uint64_t skip_mask = 0);
int coupling_kernel_stages(const CouplingSpec& spec);  // log2 K of the engine's kernel

// The alpha-beta estimate of a pattern with no network contention: stages run one after the
// other, each taking alpha + beta * (the larger of the bytes a rank sends and receives in it),
// maximised over ranks (a rank's messages share its one network port).
double alpha_beta_s(const Pattern& pattern, double alpha_s, double bytes_per_s);

// ---- platforms ----

enum class Topology { torus, fat_tree, dragonfly };
// minimal: SimGrid's native routing (dimension order on the torus, up-down on the fat tree,
// minimal on the dragonfly). valiant: built on top of the replay, an approximation (see
// docs/simulator.md): each message travels as two concurrent host-to-host legs through a
// pseudo-random intermediate host (cut-through: the bytes stream through it), and the receiver
// is told by a 0-byte message once both legs are done. ugal: per message, minimal or valiant
// (as above, same intermediate) whichever a congestion estimate says is faster: the bytes the
// replay has in flight on each link of either path (UGAL with global queue knowledge; see
// docs/simulator.md).
// ugal: global knowledge (every link of both paths); ugal_local ("ugal-l"): SST/macro's router,
// the queue at the source switch's output port times the path's hops (docs/simulator.md).
enum class Routing { minimal, valiant, ugal, ugal_local };
// "minimal", "valiant", "ugal", "ugal-l"; parse_routing throws estuary::Error on other names.
std::string routing_name(Routing routing);
Routing parse_routing(const std::string& name);

// A machine built from parameters; one simulated rank per host, rank r on host r.
struct Platform {
  Topology topology = Topology::torus;
  // torus: the dimensions (one host per torus node).
  std::vector<unsigned> dims;
  // fat tree (SimGrid's generalised fat tree): levels, and per level the down links, up links
  // and parallel links; hosts = product of down.
  unsigned levels = 0;
  std::vector<unsigned> down, up, parallel;
  // dragonfly: groups, chassis per group, routers per chassis, hosts per router, and the
  // links between groups, between chassis and between routers (Cray XC layout).
  unsigned groups = 0, chassis = 0, routers = 0, nodes = 0;
  unsigned group_links = 1, chassis_links = 1, router_links = 1;

  double bandwidth_Bps = 12.5e9;  // every link
  double latency_s = 100e-9;      // every link
  Routing routing = Routing::minimal;

  static Platform torus(unsigned x, unsigned y, unsigned z);
  // A k-ary fat tree of `levels` switch levels: k^levels hosts, full bisection.
  static Platform fat_tree(unsigned levels, unsigned k);
  // group_links is set for a balanced dragonfly: chassis*routers*nodes / (2*(groups-1)), at
  // least 1. SimGrid needs routers >= groups (simulate() checks).
  static Platform dragonfly(unsigned groups, unsigned chassis, unsigned routers, unsigned nodes);
  // Paper 004 Table 1 by name (torus-M, fattree-M, dragonfly-MM, -SL, -LS, torus-L, fattree-L,
  // dragonfly-ML); throws on unknown names.
  static Platform by_name(const std::string& name);

  std::int64_t hosts() const;
  std::string describe() const;  // e.g. "torus 8x8x8, 12.5 GB/s, 100 ns, minimal"
};

// ---- replay ----

// The actor stack the replay gives each rank from 200 000 ranks up (SimOptions::stack_kib = 0),
// KiB. A rank's actor uses 3-4 KiB, and on AVX-512 machines up to ~2.7 KB more the first time one
// of its calls binds lazily (the dynamic linker saves the vector registers on the caller's
// stack): there a 5 KiB stack overflows into a guard page and 6 KiB does not, with every pattern
// and routing (test_sim checks this size less 2 KiB with guard pages). Stacks are SimGrid's
// largest per-rank cost (guard pages are off at scale: one mapping each would exceed
// vm.max_map_count): about 2 KB a rank in peak memory per 2 KiB of stack.
inline constexpr int kLargeRunStackKib = 8;
// AddressSanitizer's redzones make every frame several times larger: its builds scale the
// automatic stack sizes (and test_sim its stack checks) by this.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr int kStackScale = 4;
#else
inline constexpr int kStackScale = 1;
#endif

struct SimOptions {
  // Actor stack, KiB; 0: 64 below 20 000 ranks, 16 below 200 000, else kLargeRunStackKib.
  int stack_kib = 0;
  bool crosstraffic = false;   // SimGrid network/crosstraffic (ACK traffic on reverse paths)
  // The network model. cm02: max-min fair sharing of every link, nothing else (a lone message
  // takes latency + size / bandwidth exactly). ib: SimGrid's InfiniBand model (Vienne et al.
  // 2012, validated against real InfiniBand clusters), which on top of that slows every flow of
  // a node by the number of flows the node and its peers have in flight, as a NIC serving its
  // flows in turn does (a flow held up by a busy receiver holds up its sender's other flows). Its
  // SMPI message-size factors are set to 1, so the per-node penalty is the only difference.
  enum class Network { cm02, ib } network = Network::cm02;
  // Run in a forked child process (default): SimGrid allows one engine per process, and the
  // child's peak memory is the run's own. false runs in this process, once per process.
  bool fork = true;
  // CPU time a rank spends per message, LogP's o (as SMPI's smpi/os and smpi/or): a stage
  // sleeps o per send before posting them and o per receive once they are in. 0: none (the
  // network alone, alpha-beta's model).
  double message_overhead_s = 0;
  // Further SimGrid settings, "name:value" (as after --cfg=), applied after estuary's own.
  std::vector<std::string> config;
  // Ranks a simulated host (a node with one network port): 1 replays every rank on a host of
  // its own (exact: each message its own SimGrid flow); k > 1 replays per_host(pattern, k) on
  // ceil(ranks / k) hosts, one actor and one flow per host pair and stage, which SimGrid's
  // max-min solver, whose cost grows with the square of the concurrent flows, can take at
  // 10^4 + 10^4 ranks (see docs/simulator.md, Scale).
  int ranks_per_host = 1;
  // SimGrid's maxmin/precision (SimGrid's own default 1e-5 aborts on 10^4 concurrent flows of
  // 12.5 GB/s links). A forked replay that SimGrid aborts or crashes (SIGABRT, SIGSEGV) is run
  // again with 100 times the precision, up to 1, unless `config` sets maxmin/precision.
  double maxmin_precision = 1e-4;
};

struct SimResult {
  std::string pattern, platform;
  int ranks = 0, stages = 0;
  double simulated_s = 0;     // simulated time when the last rank finished
  double wall_build_s = 0;    // platform construction
  double cpu_build_s = 0;     // its CPU time
  double wall_run_s = 0;      // engine.run()
  double cpu_run_s = 0;       // CPU time of engine.run() (wall time less the machine's other load)
  double peak_rss_mb = 0;     // peak resident memory of the simulating process
  std::int64_t messages = 0, bytes = 0;
  std::int64_t detoured = 0;  // messages sent on a valiant path (all with valiant, UGAL's choice)
  int ranks_per_host = 1;     // SimOptions::ranks_per_host; messages and stages are the hosts'
  double maxmin_precision = 1e-4;  // the precision the replay took (raised after an abort)
  bool crosstraffic = false;
  std::string network = "cm02";  // SimOptions::network
  double message_overhead_s = 0;
};

// Replays `pattern` on `platform` (ranks() <= hosts()). Throws estuary::Error when the pattern
// does not fit, when sends and receives do not match (the replay would deadlock), or when the
// simulation fails.
SimResult simulate(const Platform& platform, const Pattern& pattern, const SimOptions& options = {});

// The adaptive coupler exchange, chosen by profiling inside the simulation: the engine's search
// (AdaptiveSearch, adaptive.hpp) fed each candidate's simulated time on `platform` instead of a
// measured one: the full butterfly, then kernel stage 0, 1, ... skipped in turn on top of the
// best so far (a skip is kept when faster), then P2P if not reached; candidates with the stages
// of one already replayed are passed over. One simulate() per candidate.
struct CouplingTrial {
  std::uint64_t skip_mask = 0;
  double simulated_s = 0;
};
struct CouplingChoice {
  std::string name;              // "coupling p2p", "coupling butterfly", "coupling butterfly-skip-0,2"
  std::uint64_t skip_mask = 0;
  int kernel_stages = 0;
  std::vector<CouplingTrial> trials;  // in the order replayed
  double profiling_s = 0;             // simulated time of all trials (what profiling would cost)
  SimResult result;                   // the chosen schedule's replay
};
CouplingChoice coupling_adaptive(const Platform& platform, const CouplingSpec& spec, const SimOptions& options = {});
// The same search for any plan's flows on `ranks` ranks (e.g. plan_flows of a coupling at 10^4
// ranks); patterns are named name + " " + AdaptiveChoice::name().
CouplingChoice butterfly_adaptive(const Platform& platform, const std::string& name, int ranks,
                                  std::span<const butterfly::Flow> flows, std::int64_t bytes_per_element,
                                  const SimOptions& options = {});

// Checks that every message sent has a receive of the same size posted in the same stage by
// the peer, and vice versa. Throws estuary::Error naming the first mismatch. O(messages).
void check_matching(const Pattern& pattern);

}  // namespace estuary::sim
