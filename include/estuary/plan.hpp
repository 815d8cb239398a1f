// Plan — for a (source, destination) decomposition pair, the exact element runs each rank sends
// to and receives from every peer. No buffers, no datatypes: a plan counts elements.
//
// Built collectively with a distributed directory: the global index space is cut into one
// contiguous bucket per rank; sources and destinations tell each bucket owner what they hold
// there, the owner answers each destination with the source rank and offset of every index it
// asked about, and the destination forms the runs and tells each source its side. No rank ever
// holds all global indices; set-up memory per rank is O(n/p + what the rank itself exchanges).
//
// The layout is fixed (tests/test_plan.cpp checks it against a serial rule): a pair's elements
// travel bucket after bucket (bucket b = [b*n/p, (b+1)*n/p)), in the destination's local order
// within a bucket, cut greedily into runs that are arithmetic on both sides (a run's second
// element fixes both strides; no run spans two buckets).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"

namespace estuary {
namespace detail {
struct SharedComm;
}

// What to do with a destination index that no source rank owns.
enum class MissingPolicy {
  error,  // Error naming the index and the destination rank (default)
  fill,   // the element is set to PlanOptions::fill_value at every exchange
};

// What to do with a global index that two source ranks own.
enum class DuplicatePolicy {
  error,        // Error naming the index and both ranks (default)
  lowest_rank,  // the lowest source rank provides it (halo cells in a source)
};

struct PlanOptions {
  MissingPolicy missing = MissingPolicy::error;
  double fill_value = 0.0;  // with MissingPolicy::fill, converted to each field's type
  DuplicatePolicy duplicate = DuplicatePolicy::error;
};

// `count` elements at offset, offset + stride, ... of a local buffer.
struct Segment {
  std::int64_t offset = 0;
  std::int64_t count = 0;
  std::int64_t stride = 1;
  bool operator==(const Segment&) const = default;
};

// The elements exchanged with one peer, in message order. The sender's segments and the
// receiver's segments of one pair list the same elements in the same order.
struct PeerSegments {
  int peer = 0;
  std::vector<Segment> segments;
  std::int64_t count() const;
};

// Plan statistics over all ranks (plan.stats() is collective). "messages" exclude a rank's
// copy to itself; elements count every element that leaves a rank, itself included.
struct PlanStats {
  int ranks = 0;
  std::int64_t messages_total = 0, messages_max = 0, messages_min = 0;
  double messages_avg = 0;
  std::int64_t elements_total = 0, elements_max = 0, elements_min = 0;  // sent per rank
  double elements_avg = 0;
  std::int64_t self_elements_total = 0;  // copied locally, not sent
};

// Seconds this rank spent in each set-up phase.
struct PlanTimers {
  double cut_s = 0;       // cutting runs at directory bucket boundaries, laying out the requests
  double to_dir_s = 0;    // all-to-all of the requests to the directory
  double match_s = 0;     // the directory: owners of this rank's bucket, answers per destination
  double replies_s = 0;   // answers back, runs formed per source, their source side sent out
};

class Plan {
 public:
  // Collective over comm. Throws estuary::Error on every rank when any rank finds a fault.
  Plan(const Decomp& src, const Decomp& dst, MPI_Comm comm, PlanOptions options = {});
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // The library's private copy of the constructor's comm, shared with every object made on it
  // (src/common/shared_comm.hpp); the plan keeps it alive.
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::int64_t src_size() const { return src_size_; }  // local source elements
  std::int64_t dst_size() const { return dst_size_; }  // local destination elements
  std::int64_t global_size() const { return global_size_; }
  const PlanOptions& options() const { return options_; }

  // Sorted by peer; the rank itself appears when it keeps some of its own data.
  const std::vector<PeerSegments>& sends() const { return sends_; }
  const std::vector<PeerSegments>& recvs() const { return recvs_; }
  // Destination elements with no source (MissingPolicy::fill only).
  const std::vector<Segment>& missing() const { return missing_; }

  PlanStats stats() const;  // collective
  const PlanTimers& timers() const { return timers_; }

  // The same exchange the other way (destination -> source): every send becomes a receive and
  // every receive a send, element for element, with no new set-up (no directory, no matching).
  // Source elements that no destination holds receive nothing (they keep their values); an
  // index the destination holds more than once sends each copy back and the source element
  // ends with the last one received (copies hold the same value after a forward exchange).
  // Destination elements filled under MissingPolicy::fill send nothing. The reverse has no
  // missing elements of its own. Local: no communication.
  Plan transposed() const;

 private:
  Plan() = default;
  std::shared_ptr<detail::SharedComm> shared_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::int64_t src_size_ = 0, dst_size_ = 0, global_size_ = 0;
  PlanOptions options_;
  std::vector<PeerSegments> sends_, recvs_;
  std::vector<Segment> missing_;
  PlanTimers timers_;
};

}  // namespace estuary
