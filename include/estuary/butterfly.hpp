// Butterfly schedules (paper 001, Sects. 3-4): a plan routed through a power-of-two kernel.
//
// The K = 2^L kernel positions are hosted by K distinct ranks. A flow (all elements one rank
// sends to one other rank) travels in L + 2 hops: sender -> kernel position a (process mapping
// in), L kernel stages, kernel position d -> receiver (process mapping out). Kernel stage s
// exchanges between positions i and i ^ 2^s the flows whose destination position differs from i
// in bit s, so every position has one partner per stage. Flows are forwarded through
// Buffer::tmp and land in dst exactly where the plan says: results are bit-identical to P2P.
//
// Skipping kernel stage s (bit s of a skip mask, paper Sect. 4) merges it into the hop before
// it: a flow jumps straight from where it was before that hop to where it is after this stage,
// so one stage has more peers and the schedule one stage fewer. With every kernel stage skipped
// there is no kernel left and the schedule is P2P. Hops that move nothing on any rank are
// dropped, so stage numbers agree on all ranks.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "estuary/plan.hpp"
#include "estuary/schedule.hpp"

namespace estuary {
namespace butterfly {

// Largest power of two not above n; 1 when n <= 1.
int kernel_size(int n);
int log2_exact(int power_of_two);
// Reverses the low `bits` bits of x.
int bit_reverse(int x, int bits);

// The paper's load-balancing order: pad `sizes` with zero-size virtual members up to a power of
// two, then pair the largest remaining group with the smallest, level by level, until one group
// is left. Returns member indices in that order (-1 for a virtual member). Level-l groups are
// the consecutive runs of 2^l entries, largest-containing group first at each level.
std::vector<int> pairing_order(std::span<const std::int64_t> sizes);

// How the members of one side (senders or receivers) sit on the kernel's K positions. Member i
// uses the positions base[i] | x for every x whose bits lie in free[i]: one position when
// free[i] == 0, else 2^popcount(free[i]) of them (one-to-many). Never many-to-many.
struct SideMap {
  int kernel = 1;
  std::vector<int> order;  // pairing_order of the side
  std::vector<int> base;   // per member
  std::vector<int> free;   // per member
  std::vector<int> positions(int member) const;
  std::vector<std::vector<int>> members_by_position() const;
  bool many_to_many() const;  // true if some position has several members and one of them several positions
};

// Senders: groups of the pairing order, in order, map onto consecutive positions (many-to-one)
// when there are at least K padded members; otherwise slot t uses the positions whose low
// log2(padded) bits equal t (one-to-many), the free high bits chosen per flow by destination.
SideMap map_senders(std::span<const std::int64_t> sizes, int kernel);

// Receivers: the same grouping, with the group order bit-reversed onto positions (the last
// kernel stages pair positions that differ in their high bits, so balanced groups must differ
// there). hosted[i] >= 0 is a position hosted by receiver i's own rank: such a receiver (or its
// group) is placed there first, heaviest first, because a mapping hop that moves data costs a
// whole extra pass, more than the balance it buys. The free low bits (one-to-many from the
// kernel's side) are chosen per flow equal to the flow's start position, so those stages cost
// nothing.
SideMap map_receivers(std::span<const std::int64_t> sizes, int kernel, std::span<const int> hosted = {});

// The rank hosting each kernel position: per position its heaviest sender (that sender's data
// then never leaves its rank to enter the kernel), then the heaviest receivers, then any other
// rank, lowest first. ranks_* give the comm rank of each member; comm_size >= K.
std::vector<int> choose_hosts(const SideMap& senders, std::span<const int> sender_ranks,
                              std::span<const std::int64_t> send_sizes, std::span<const int> receiver_ranks,
                              std::span<const std::int64_t> recv_sizes, int comm_size);

// The route of every flow of a plan, the same on every rank (and in the simulator, which builds
// it for all ranks in one process). Built from each comm rank's totals: the elements it sends
// to, and receives from, other ranks (its own part is a local copy, never routed). The kernel
// has K = kernel_size(ranks with data) positions; the mappings and hosts are map_senders,
// choose_hosts and map_receivers (the receivers placed at the positions their ranks host).
class Router {
 public:
  Router(std::span<const std::int64_t> send_totals, std::span<const std::int64_t> recv_totals);
  int kernel() const { return kernel_; }
  int stages() const { return stages_; }  // log2(kernel)
  const std::vector<int>& hosts() const { return hosts_; }
  // The rank holding the flow from -> to before each hop h = 0 .. L + 2 (at[0] = from, at[L + 2]
  // = to): hop 0 maps the sender in, hop s + 1 is kernel stage s, hop L + 1 maps out. `from`
  // must send and `to` receive something (stages() > 0). Free bits on either side are chosen so
  // that the stages they decide move nothing.
  void route(int from, int to, std::vector<int>& at) const;

 private:
  int kernel_ = 1, stages_ = 0;
  std::vector<int> hosts_, sidx_, ridx_;  // sidx_/ridx_: member index of a comm rank, or -1
  SideMap smap_, rmap_;
};

// Bit h is set when the path `at` (Router::route) moves at hop h.
std::uint64_t moving_hops(std::span<const int> at);

// The hops [first, last] each stage of the schedule with skip_mask covers, for `stages` kernel
// stages and the hops that move some flow on some rank (bit h of moving): a skipped kernel stage
// joins the group before it; with none left, one group is P2P. Each group is trimmed to the hops
// that move something, and goes if there are none. Equal lists mean equal schedules.
std::vector<std::pair<int, int>> stage_hops(int stages, std::uint64_t moving, std::uint64_t skip_mask);
// The mask with every kernel stage skipped when it gives the same stages as skip_mask (its
// schedule is then P2P), else skip_mask.
std::uint64_t canonical_mask(int stages, std::uint64_t moving, std::uint64_t skip_mask);

// One flow of a plan between two ranks (never a rank's part to itself).
struct Flow {
  int from = 0, to = 0;
  std::int64_t count = 0;  // elements
};
// One message of a butterfly schedule as the network sees it.
struct StageMessage {
  int stage = 0, from = 0, to = 0;
  std::int64_t count = 0;  // elements: the flows that travel together
};
// Every rank's messages of ButterflyRouting(plan).schedule(skip_mask) at once, computed in one
// process from the plan's flows (every flow of every rank, with count > 0) on `ranks` ranks:
// what the simulator replays. Sorted by (stage, from, to); `stages_out` gets the schedule's stage
// count (at least 1, as a schedule always has a stage).
std::vector<StageMessage> all_messages(int ranks, std::span<const Flow> flows, std::uint64_t skip_mask,
                                       int* stages_out = nullptr);
// The moving hops of all_messages' flows (for stage_hops and canonical_mask).
std::uint64_t all_moving_hops(int ranks, std::span<const Flow> flows);

}  // namespace butterfly

// The collective part of a butterfly set-up, done once per plan: every rank learns the per-rank
// totals (one allgather of two numbers) and the flows that pass through it (each sender tells
// the kernel hosts on a flow's path its destination and size: O(messages * log K) numbers), and
// which hops move data anywhere (one allreduce). Schedules for any skip mask are then built
// locally. The plan must outlive the routing.
class ButterflyRouting {
 public:
  explicit ButterflyRouting(const Plan& plan);  // collective over plan.comm()
  int kernel() const { return kernel_; }
  int kernel_stages() const { return stages_; }  // log2(kernel)
  const std::vector<int>& hosts() const { return hosts_; }
  // This rank's schedule with the kernel stages in skip_mask skipped (bits >= stages ignored).
  Schedule schedule(std::uint64_t skip_mask = 0) const;
  // The hops [first, last] each stage of schedule(skip_mask) covers: hop 0 maps senders in,
  // hop s + 1 is kernel stage s, hop L + 1 maps out. Equal lists mean equal schedules.
  std::vector<std::pair<int, int>> stage_hops(std::uint64_t skip_mask) const;
  // Bit h: hop h moves some flow on some rank (the same on every rank).
  std::uint64_t moving_hops() const { return moving_hops_; }

 private:
  struct Flow {
    int from = 0, to = 0;  // sender and receiver ranks
    std::int64_t count = 0;
    std::vector<int> at;   // the rank holding it before hop h: at[0] = from, ..., at[L + 2] = to
  };
  const Plan* plan_;
  int kernel_ = 1, stages_ = 0;
  std::vector<int> hosts_;
  std::vector<Flow> flows_;         // every flow that touches this rank, sorted by (from, to)
  std::uint64_t moving_hops_ = 0;   // bit h: hop h moves some flow on some rank
};

// Collective: ButterflyRouting(plan).schedule(skip_mask), named "butterfly".
Schedule butterfly_schedule(const Plan& plan, std::uint64_t skip_mask = 0);

}  // namespace estuary
