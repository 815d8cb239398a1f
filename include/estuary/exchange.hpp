// Exchange — the MPI executor: runs a schedule on real buffers, as many times as needed.
//
// Set-up (collective) takes a block of tags on the library's shared copy of the communicator
// (src/common/shared_comm.hpp) and creates persistent requests and pack
// buffers for one list of field types. Then start()/finish() or run() move any number of field
// sets of those types. All fields of a message travel together: one message per peer and stage,
// whatever the number of fields (OASIS multi-field coupling).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "estuary/schedule.hpp"
#include "estuary/types.hpp"

namespace estuary {

// Cumulative seconds spent in each phase since construction, the messages received straight
// into the destination array (zero-copy: a one-field message that is one contiguous piece of
// it skips the receive buffer and the unpack), and the stages whose sends and local copies were
// one interleaved pass over the source (each a strided block at one common stride, as
// block -> cyclic's). Sends always pack at start(): the source may be reused once it returns.
struct ExchangeTimers {
  double pack_s = 0, wait_s = 0, unpack_s = 0, copy_s = 0;
  std::int64_t runs = 0;
  std::int64_t zero_copy_recvs = 0;
  std::int64_t interleaved_packs = 0;  // stages packed in one interleaved pass (block -> cyclic)
  std::int64_t typed_sends = 0, typed_recvs = 0;  // messages moved as derived datatypes
};

class Exchange {
 public:
  // Collective over comm. The first form copies the schedule; the second shares it (several
  // executors of one schedule, e.g. one per list of field types, keep one copy).
  Exchange(const Schedule& schedule, MPI_Comm comm, std::vector<Type> types);
  Exchange(std::shared_ptr<const Schedule> schedule, MPI_Comm comm, std::vector<Type> types);
  ~Exchange();
  Exchange(Exchange&&) noexcept;
  Exchange& operator=(Exchange&&) noexcept;

  // Starts moving `fields` (one per type given at construction, same order). Buffers must stay
  // valid and untouched until finish() returns.
  void start(std::span<const Field> fields);
  void start(std::initializer_list<Field> fields) { start(std::span<const Field>(fields)); }
  void finish();
  // start() and finish() in one: the source cannot change in between, so a one-field message
  // of long runs is sent straight from it (ESTUARY_DATATYPE_MIN_RUN) instead of packed.
  void run(std::span<const Field> fields);
  void run(std::initializer_list<Field> fields) { run(std::span<const Field>(fields)); }

  const Schedule& schedule() const;
  const std::vector<Type>& types() const;
  const ExchangeTimers& timers() const;

 private:
  void start(std::span<const Field> fields, bool source_held);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary
