#include "common/shared_comm.hpp"

#include <atomic>

#include "common/mpi_util.hpp"

namespace estuary::detail {
namespace {

std::atomic<std::int64_t> dups{0};

// On a user communicator: a heap shared_ptr<SharedComm>, released when the user frees it.
int release_copy(MPI_Comm, int, void* attr, void*) {
  delete static_cast<std::shared_ptr<SharedComm>*>(attr);
  return MPI_SUCCESS;
}

int copy_keyval() {
  static const int kv = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release_copy, &k, nullptr), "MPI_Comm_create_keyval");
    return k;
  }();
  return kv;
}

// On a private copy: a plain pointer to its own SharedComm, so that asking with the copy finds
// it (no ownership: the SharedComm owns the communicator, not the other way round).
int self_keyval() {
  static const int kv = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, nullptr),
              "MPI_Comm_create_keyval");
    return k;
  }();
  return kv;
}

}  // namespace

SharedComm::~SharedComm() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (comm != MPI_COMM_NULL && !fin) MPI_Comm_free(&comm);
}

std::shared_ptr<SharedComm> shared_comm(MPI_Comm user) {
  void* attr = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(user, self_keyval(), &attr, &found), "MPI_Comm_get_attr");
  if (found) return static_cast<SharedComm*>(attr)->shared_from_this();
  check_mpi(MPI_Comm_get_attr(user, copy_keyval(), &attr, &found), "MPI_Comm_get_attr");
  if (found) return *static_cast<std::shared_ptr<SharedComm>*>(attr);
  auto c = std::make_shared<SharedComm>();
  check_mpi(MPI_Comm_dup(user, &c->comm), "MPI_Comm_dup");
  ++dups;
  check_mpi(MPI_Comm_set_attr(c->comm, self_keyval(), c.get()), "MPI_Comm_set_attr");
  auto* held = new std::shared_ptr<SharedComm>(c);
  const int rc = MPI_Comm_set_attr(user, copy_keyval(), held);
  if (rc != MPI_SUCCESS) delete held;
  check_mpi(rc, "MPI_Comm_set_attr");
  return c;
}

int take_tags(SharedComm& c) {
  static const int blocks = [] {
    void* v = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &found);
    const int ub = found ? *static_cast<int*>(v) : 32767;  // the least MPI guarantees
    return (ub - kFirstObjectTag + 1) / kTagsPerObject;
  }();
  const std::uint64_t id = c.next_object++;
  return kFirstObjectTag + static_cast<int>(id % static_cast<std::uint64_t>(blocks)) * kTagsPerObject;
}

std::int64_t shared_comm_dups() { return dups.load(); }

}  // namespace estuary::detail
