// All-to-all schedules of paper 004 (Table 2): burst, ring-k and Bruck. Each turns any plan into
// a schedule the unchanged executor runs; they differ only in how messages are put in stages.
//
// - burst: every message in one stage, posted in ring order (r+1, r+2, ...): the paper's
//   "ring-k with k = p-1".
// - ring-k: p-1 steps; at step i rank r sends to (r+i)%p and receives from (r-i)%p; k steps form
//   a stage, so at most k sends and k receives are in flight: ceil((p-1)/k) stages.
// - bruck: ceil(log2 p) stages; at stage j rank r sends to (r+2^j)%p every chunk whose
//   destination offset (dest - origin) mod p has bit j set. Chunks that have not arrived wait in
//   the tmp buffer; arriving chunks are unpacked straight into dst as the plan says.
//
// A pair of ranks with nothing to exchange sends no message (the paper's algorithms send empty
// ones): both sides know it from the plan, so skipping costs no agreement, and the stage
// structure is kept, so stage counts are as in Table 2 whatever the plan. One rank alone still
// gets one stage, which holds its local copy.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "common/mpi_util.hpp"
#include "estuary/alltoall.hpp"
#include "estuary/error.hpp"
#include "estuary/schedule.hpp"
#include "estuary/settings.hpp"

namespace estuary {
namespace {

using i64 = std::int64_t;

// The ring-k default when ESTUARY_RING_K is unset. Paper 004 (Fig. 5a) finds ring-1 and ring-4
// alike below ~5e4 ranks; 2 keeps two messages in flight without burst's congestion.
constexpr int kDefaultRingK = 2;
constexpr int kBruckTag = 7400;  // set-up messages on the plan's (private) communicator

// A schedule with the p2p schedule's sizes, fills and local copy, and `stages` empty stages.
Schedule staged_like(const Schedule& p2p, int stages) {
  Schedule s;
  s.src_size = p2p.src_size;
  s.dst_size = p2p.dst_size;
  s.fills = p2p.fills;
  s.fill_value = p2p.fill_value;
  s.stages.resize(static_cast<std::size_t>(std::max(1, stages)));
  // The local part moves in the first stage, while the first messages fly.
  s.stages[0].copies = p2p.stages[0].copies;
  return s;
}

// Appends a block, merging it with the previous one when they are adjacent runs of one buffer
// (consecutive tmp chunks become one block, so the executor copies them in one go).
void append(std::vector<Block>& blocks, const Block& b) {
  if (b.count == 0) return;
  if (!blocks.empty()) {
    Block& last = blocks.back();
    if (last.buffer == b.buffer && last.stride == 1 && b.stride == 1 &&
        last.offset + last.count == b.offset) {
      last.count += b.count;
      return;
    }
  }
  blocks.push_back(b);
}

using alltoall::ring_distance;

Schedule ring_schedule(const Plan& plan, int k) {
  const int p = plan.size(), r = plan.rank();
  const Schedule p2p = p2p_schedule(plan);
  Schedule s = staged_like(p2p, alltoall::ring_stages(p, k));
  // Messages of step i (1..p-1) go to stage ring_stage(i, k); within a stage, in step order.
  auto place = [&](const std::vector<Message>& from, bool send) {
    std::vector<std::pair<int, const Message*>> by_step;
    for (const Message& m : from)
      by_step.push_back({send ? ring_distance(r, m.peer, p) : ring_distance(m.peer, r, p), &m});
    std::sort(by_step.begin(), by_step.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [step, m] : by_step) {
      Stage& stage = s.stages[static_cast<std::size_t>(alltoall::ring_stage(step, k))];
      (send ? stage.sends : stage.recvs).push_back(*m);
    }
  };
  place(p2p.stages[0].sends, true);
  place(p2p.stages[0].recvs, false);
  return s;
}

// ESTUARY_RING_K, or the default; the same on every rank (checked), else the stages would
// not match and the exchange would hang.
int ring_k_from_env(const Plan& plan) {
  int k = kDefaultRingK;
  detail::agree(plan.comm(), [&] {
    const std::optional<std::string>& setting = Settings::get().ring_k;
    if (!setting) return;
    const char* env = setting->c_str();
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || errno != 0 || v < 1 || v > (1L << 30))
      throw Error(std::string("ESTUARY_RING_K='") + env + "' is not a positive integer",
                  "rank " + std::to_string(plan.rank()),
                  "set it to the number of messages in flight per stage (e.g. 4), or unset it");
    k = static_cast<int>(v);
  });
  int lo = 0, hi = 0;
  detail::check_mpi(MPI_Allreduce(&k, &lo, 1, MPI_INT, MPI_MIN, plan.comm()), "MPI_Allreduce");
  detail::check_mpi(MPI_Allreduce(&k, &hi, 1, MPI_INT, MPI_MAX, plan.comm()), "MPI_Allreduce");
  if (lo != hi)
    throw Error("ESTUARY_RING_K differs between ranks (" + std::to_string(lo) + " to " +
                    std::to_string(hi) + ")",
                "rank " + std::to_string(plan.rank()), "give every rank the same value");
  return k;
}

// First-fit allocator of tmp ranges: chunks forwarded by Bruck live there between stages.
class TmpSpace {
 public:
  i64 allocate(i64 n) {
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= n) {
        const i64 at = it->first, left = it->second - n;
        free_.erase(it);
        if (left > 0) free_[at + n] = left;
        return at;
      }
    // Grow at the end, absorbing a free range that touches it.
    i64 at = end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        at = last->first;
        free_.erase(last);
      }
    }
    end_ = at + n;
    return at;
  }
  void release(i64 at, i64 n) {
    auto next = free_.lower_bound(at);
    if (next != free_.end() && at + n == next->first) {
      n += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += n;
        return;
      }
    }
    free_[at] = n;
  }
  i64 size() const { return end_; }

 private:
  std::map<i64, i64> free_;  // offset -> length
  i64 end_ = 0;
};

Schedule bruck_schedule(const Plan& plan) {
  const int p = plan.size(), r = plan.rank();
  const int nstages = alltoall::bruck_stages(p);
  const Schedule p2p = p2p_schedule(plan);
  Schedule s = staged_like(p2p, nstages);

  // held[d]: where the chunk this rank holds with destination offset d sits now. A chunk that
  // has not moved is the p2p send's src blocks; one that is on its way is one tmp block.
  struct Chunk {
    i64 count = 0;
    std::vector<Block> blocks;
  };
  std::vector<Chunk> held(static_cast<std::size_t>(p));
  std::vector<const Message*> arrival(static_cast<std::size_t>(p), nullptr);  // by offset
  for (const Message& m : p2p.stages[0].sends)
    held[static_cast<std::size_t>(ring_distance(r, m.peer, p))] = {m.count(), m.blocks};
  for (const Message& m : p2p.stages[0].recvs)
    arrival[static_cast<std::size_t>(ring_distance(m.peer, r, p))] = &m;

  TmpSpace tmp;
  std::string fault;  // reported on every rank after the loop, never mid-way (no hang)
  for (int j = 0; j < nstages && (1 << j) < p; ++j) {  // one rank alone: its copy, no message
    const int step = 1 << j;
    const int to = (r + step) % p, from = ((r - step) % p + p) % p;
    std::vector<int> offsets;
    for (int d = 1; d < p; ++d)
      if (alltoall::bruck_moves(d, j)) offsets.push_back(d);
    Stage& stage = s.stages[static_cast<std::size_t>(j)];

    Message out{to, {}};
    std::vector<i64> counts;
    for (int d : offsets) {
      Chunk& c = held[static_cast<std::size_t>(d)];
      counts.push_back(c.count);
      for (const Block& b : c.blocks) {
        append(out.blocks, b);
        // Packing (start of the stage) precedes unpacking (end of it), so this stage's
        // receives may already reuse the range.
        if (b.buffer == Buffer::tmp) tmp.release(b.offset, b.count);
      }
      c = {};
    }
    // The receiver needs the chunk sizes: the same exchange on counts, once, at set-up.
    std::vector<i64> in_counts(counts.size());
    detail::check_mpi(MPI_Sendrecv(counts.data(), static_cast<int>(counts.size()), MPI_INT64_T, to,
                                   kBruckTag + j, in_counts.data(), static_cast<int>(in_counts.size()),
                                   MPI_INT64_T, from, kBruckTag + j, plan.comm(), MPI_STATUS_IGNORE),
                      "MPI_Sendrecv");

    Message in{from, {}};
    for (std::size_t x = 0; x < offsets.size(); ++x) {
      const int d = offsets[x];
      const i64 n = in_counts[x];
      if (alltoall::bruck_arrives(d, j)) {
        // No higher bit left: the chunk has reached its destination and its origin is r - d.
        const Message* m = arrival[static_cast<std::size_t>(d)];
        const i64 want = m ? m->count() : 0;
        if (n != want && fault.empty())
          fault = "Bruck delivers " + std::to_string(n) + " elements from rank " +
                  std::to_string(((r - d) % p + p) % p) + " where the plan expects " +
                  std::to_string(want);
        if (m && n == want)
          for (const Block& b : m->blocks) append(in.blocks, b);
      } else if (n > 0) {
        const Block b{Buffer::tmp, tmp.allocate(n), n, 1};
        append(in.blocks, b);
        held[static_cast<std::size_t>(d)] = {n, {b}};
      }
    }
    if (!out.blocks.empty()) stage.sends.push_back(std::move(out));
    if (!in.blocks.empty()) stage.recvs.push_back(std::move(in));
  }
  s.tmp_size = tmp.size();
  detail::agree(plan.comm(), [&] {
    if (!fault.empty())
      throw Error(fault, "rank " + std::to_string(r), "the plan's sends and receives disagree");
  });
  return s;
}

}  // namespace

// Adds the all-to-all algorithms to the registry (called once, when the registry is built).
void register_alltoall_schedules(std::map<std::string, ScheduleBuilder>& into) {
  into["burst"] = [](const Plan& plan) { return ring_schedule(plan, std::max(1, plan.size() - 1)); };
  into["bruck"] = bruck_schedule;
  into["ring-k"] = [](const Plan& plan) { return ring_schedule(plan, ring_k_from_env(plan)); };
  for (int k : {1, 2, 4, 8})
    into["ring-" + std::to_string(k)] = [k](const Plan& plan) { return ring_schedule(plan, k); };
}

}  // namespace estuary
