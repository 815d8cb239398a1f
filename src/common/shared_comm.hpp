// The library's private communicator: one MPI_Comm_dup per user communicator, shared by every
// Plan, Exchange, Remap and Reader made on it (issue 18: they used to duplicate it each, five
// times per Remap), instead of one per object.
//
// The copy is cached on the user's communicator as an attribute (MPI_Comm_set_attr) and goes
// when the user frees that communicator — or later, when the last object still using it goes:
// objects hold it by shared_ptr, so freeing the user's communicator while a Redist lives is safe.
// Asking again with the private communicator itself (plan.comm() handed to an Exchange) gives
// the same copy back, not a copy of the copy.
//
// Messages of different objects must not mix on the shared communicator. Collectives cannot
// (they match in call order, which MPI already requires to be the same on every rank), and
// set-up point-to-point messages that complete inside one call use tags below kFirstObjectTag.
// Each executor that keeps messages in flight across calls takes its own block of
// kTagsPerObject tags with take_tags(): ids are counted per communicator, so executors on one
// communicator must be created in the same order on every rank (as the MPI_Comm_dup they
// replace required).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace estuary::detail {

constexpr int kFirstObjectTag = 8192;  // tags below: set-up messages finished within one call
constexpr int kTagsPerObject = 16;     // an executor's stage k uses tag base + k % 16

struct SharedComm : std::enable_shared_from_this<SharedComm> {
  MPI_Comm comm = MPI_COMM_NULL;  // the private copy
  std::uint64_t next_object = 0;  // executors created on it so far (take_tags)
  SharedComm() = default;
  SharedComm(const SharedComm&) = delete;
  SharedComm& operator=(const SharedComm&) = delete;
  ~SharedComm();  // frees comm unless MPI is finalized
};

// The private copy of `user` (collective the first time for each user communicator: it is
// duplicated then).
std::shared_ptr<SharedComm> shared_comm(MPI_Comm user);

// The first of kTagsPerObject tags for a new executor on `c`. Blocks wrap around after about
// (MPI_TAG_UB - kFirstObjectTag) / kTagsPerObject executors: only two executors that far apart
// in creation order, both alive and in flight at once to the same peer, could meet.
int take_tags(SharedComm& c);

// MPI_Comm_dup calls made by shared_comm since the program started (for tests).
std::int64_t shared_comm_dups();

}  // namespace estuary::detail
