// Schedule — a plan arranged in stages by an algorithm. Plain data: it can be printed, counted
// and replayed by any executor (MPI today, the SimGrid simulator later).
//
// Each rank sees three element buffers: the source field (Buffer::src), the destination field
// (Buffer::dst) and a staging area (Buffer::tmp, tmp_size elements) that multi-stage algorithms
// such as the butterfly use to forward data. A stage packs its sends, posts its messages, does
// its local copies while the messages fly, then unpacks what it received. Stage k may read what
// stage k-1 received.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/plan.hpp"

namespace estuary {

enum class Buffer : std::uint8_t { src, dst, tmp };

// `count` elements at offset, offset + stride, ... of one buffer.
struct Block {
  Buffer buffer = Buffer::src;
  std::int64_t offset = 0;
  std::int64_t count = 0;
  std::int64_t stride = 1;
  bool operator==(const Block&) const = default;
};

// One message: its elements are the blocks' elements in order (for every field in turn).
struct Message {
  int peer = 0;
  std::vector<Block> blocks;
  std::int64_t count() const;  // elements per field
};

// A local copy of `from` to `to` (the same element count).
struct Copy {
  Block from, to;
};

struct Stage {
  std::vector<Message> sends, recvs;
  std::vector<Copy> copies;
};

// Per-rank counts of a schedule (local: no communication). Bytes are elements times the bytes
// of one element of every field moved together.
struct ScheduleStats {
  int stages = 0;
  std::int64_t messages_sent = 0, messages_received = 0;
  std::int64_t elements_sent = 0, elements_received = 0, elements_copied = 0;
  std::int64_t largest_message = 0, smallest_message = 0;  // elements; 0 if none
};

struct Schedule {
  std::string algorithm;
  std::int64_t src_size = 0, dst_size = 0, tmp_size = 0;  // elements per field
  std::vector<Stage> stages;
  std::vector<Block> fills;  // destination elements set to fill_value (no source)
  double fill_value = 0.0;

  ScheduleStats stats() const;
  // One line per stage and message, for logs and `estuary inspect`.
  std::string describe() const;
};

// An algorithm turns a plan into this rank's schedule. It may communicate over plan.comm()
// (collectively) to balance or agree on stages.
using ScheduleBuilder = std::function<Schedule(const Plan&)>;

// Registers an algorithm under a name; later registrations replace earlier ones.
void register_schedule(const std::string& name, ScheduleBuilder builder);
std::vector<std::string> schedule_names();

// Builds the schedule of `algorithm` ("p2p", ...). An empty name takes ESTUARY_SCHEDULE from
// the environment, or "p2p". Collective when the algorithm is. Unknown names throw.
Schedule make_schedule(const Plan& plan, std::string_view algorithm = {});

// The P2P schedule: one stage, every peer at once, the rank's own part copied locally.
Schedule p2p_schedule(const Plan& plan);

}  // namespace estuary
