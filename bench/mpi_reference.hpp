// bench/redist's yardsticks: the same redistribution done by plain MPI, on index lists built here
// without estuary's plan, so a fault in the plan cannot hide in both.
//
// Both references move the elements of every (source rank, destination rank) pair in
// increasing global index order, the lists built from every rank's decomposition (the
// generators give any rank's share, so each rank computes whom each global index belongs to):
//  - alltoallv: pack by hand into one buffer, MPI_Alltoallv, unpack by hand (the rank's own part
//    goes through MPI too, as a plain alltoallv code would do);
//  - datatype: one derived datatype per peer and side, straight on the user's arrays, with
//    Isend/Irecv and no packing — a vector when the runs are of one length at one stride, an
//    indexed block when they are of one length, indexed otherwise (what a careful hand-written
//    exchange would build).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "estuary/decomp.hpp"

namespace bench {

class MpiReference {
 public:
  // decomp_of(r) gives rank r's (source, destination) pair; every rank calls this alike.
  MpiReference(const std::function<std::pair<estuary::Decomp, estuary::Decomp>(int)>& decomp_of,
               std::int64_t n, MPI_Comm comm)
      : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &ranks_);
    if (ranks_ > 65535) throw std::runtime_error("MpiReference: more than 65535 ranks");
    const std::size_t P = static_cast<std::size_t>(ranks_);
    // Who holds each global index, on each side.
    std::vector<std::uint16_t> src_owner(static_cast<std::size_t>(n)), dst_owner(static_cast<std::size_t>(n));
    std::pair<estuary::Decomp, estuary::Decomp> mine = decomp_of(rank_);
    for (int r = 0; r < ranks_; ++r) {
      const auto pr = r == rank_ ? mine : decomp_of(r);
      mark(pr.first, src_owner, r);
      mark(pr.second, dst_owner, r);
    }
    send_off_.resize(P);
    recv_off_.resize(P);
    by_peer(mine.first, dst_owner, send_off_);
    by_peer(mine.second, src_owner, recv_off_);
    src_size_ = mine.first.size();
    dst_size_ = mine.second.size();

    scount_.resize(P); sdispl_.resize(P); rcount_.resize(P); rdispl_.resize(P);
    int s = 0, r = 0;
    for (std::size_t p = 0; p < P; ++p) {
      scount_[p] = static_cast<int>(send_off_[p].size());
      rcount_[p] = static_cast<int>(recv_off_[p].size());
      sdispl_[p] = s;
      rdispl_[p] = r;
      s += scount_[p];
      r += rcount_[p];
    }
    sbuf_.resize(static_cast<std::size_t>(s));
    rbuf_.resize(static_cast<std::size_t>(r));
    stype_.assign(P, MPI_DATATYPE_NULL);
    rtype_.assign(P, MPI_DATATYPE_NULL);
    for (std::size_t p = 0; p < P; ++p) {
      if (!send_off_[p].empty()) stype_[p] = datatype(send_off_[p]);
      if (!recv_off_[p].empty()) rtype_[p] = datatype(recv_off_[p]);
    }
  }
  ~MpiReference() {
    for (auto* v : {&stype_, &rtype_})
      for (MPI_Datatype& t : *v)
        if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
  MpiReference(const MpiReference&) = delete;
  MpiReference& operator=(const MpiReference&) = delete;

  void alltoallv(const double* src, double* dst) {
    for (std::size_t p = 0; p < send_off_.size(); ++p) {
      double* o = sbuf_.data() + sdispl_[p];
      for (const int off : send_off_[p]) *o++ = src[off];
    }
    MPI_Alltoallv(sbuf_.data(), scount_.data(), sdispl_.data(), MPI_DOUBLE, rbuf_.data(), rcount_.data(),
                  rdispl_.data(), MPI_DOUBLE, comm_);
    for (std::size_t p = 0; p < recv_off_.size(); ++p) {
      const double* i = rbuf_.data() + rdispl_[p];
      for (const int off : recv_off_[p]) dst[off] = *i++;
    }
  }

  void datatype_exchange(const double* src, double* dst) {
    reqs_.clear();
    for (int p = 0; p < ranks_; ++p) {
      const std::size_t i = static_cast<std::size_t>(p);
      if (rtype_[i] == MPI_DATATYPE_NULL) continue;
      reqs_.emplace_back();
      MPI_Irecv(dst, 1, rtype_[i], p, kTag, comm_, &reqs_.back());
    }
    for (int p = 0; p < ranks_; ++p) {
      const std::size_t i = static_cast<std::size_t>(p);
      if (stype_[i] == MPI_DATATYPE_NULL) continue;
      reqs_.emplace_back();
      MPI_Isend(src, 1, stype_[i], p, kTag, comm_, &reqs_.back());
    }
    MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
  }

  std::int64_t src_size() const { return src_size_; }
  std::int64_t dst_size() const { return dst_size_; }

 private:
  static constexpr int kTag = 4242;

  static void mark(const estuary::Decomp& d, std::vector<std::uint16_t>& owner, int r) {
    d.for_each_run([&](std::int64_t, std::int64_t g, std::int64_t count, std::int64_t stride) {
      for (std::int64_t k = 0; k < count; ++k) owner[static_cast<std::size_t>(g + k * stride)] = static_cast<std::uint16_t>(r);
    });
  }

  // Local offsets of `d` per peer (owner of the index on the other side), in global index order.
  static void by_peer(const estuary::Decomp& d, const std::vector<std::uint16_t>& other,
                      std::vector<std::vector<int>>& out) {
    if (d.size() > INT32_MAX) throw std::runtime_error("MpiReference: more than 2^31 local elements");
    std::vector<std::pair<std::int64_t, int>> gi;
    gi.reserve(static_cast<std::size_t>(d.size()));
    d.for_each_run([&](std::int64_t local, std::int64_t g, std::int64_t count, std::int64_t stride) {
      for (std::int64_t k = 0; k < count; ++k) gi.emplace_back(g + k * stride, static_cast<int>(local + k));
    });
    if (!std::is_sorted(gi.begin(), gi.end())) std::sort(gi.begin(), gi.end());
    for (const auto& [g, off] : gi) out[other[static_cast<std::size_t>(g)]].push_back(off);
  }

  // The offsets as one derived datatype of doubles.
  static MPI_Datatype datatype(const std::vector<int>& off) {
    std::vector<int> displ, len;
    for (std::size_t i = 0; i < off.size(); ++i) {
      if (!len.empty() && off[i] == displ.back() + len.back()) ++len.back();
      else { displ.push_back(off[i]); len.push_back(1); }
    }
    const bool one_length = std::all_of(len.begin(), len.end(), [&](int l) { return l == len[0]; });
    bool one_stride = one_length;
    for (std::size_t i = 2; one_stride && i < displ.size(); ++i)
      one_stride = displ[i] - displ[i - 1] == displ[1] - displ[0];
    MPI_Datatype t, body;
    if (one_stride && displ.size() > 1) {
      // A vector starting at displ[0]: shifted by a one-block struct-free hindexed.
      MPI_Type_vector(static_cast<int>(displ.size()), len[0], displ[1] - displ[0], MPI_DOUBLE, &body);
      const MPI_Aint at = static_cast<MPI_Aint>(displ[0]) * static_cast<MPI_Aint>(sizeof(double));
      const int one = 1;
      MPI_Type_create_hindexed(1, &one, &at, body, &t);
      MPI_Type_free(&body);
    } else if (one_length) {
      MPI_Type_create_indexed_block(static_cast<int>(displ.size()), len[0], displ.data(), MPI_DOUBLE, &t);
    } else {
      MPI_Type_indexed(static_cast<int>(displ.size()), len.data(), displ.data(), MPI_DOUBLE, &t);
    }
    MPI_Type_commit(&t);
    return t;
  }

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  std::int64_t src_size_ = 0, dst_size_ = 0;
  std::vector<std::vector<int>> send_off_, recv_off_;
  std::vector<int> scount_, sdispl_, rcount_, rdispl_;
  std::vector<double> sbuf_, rbuf_;
  std::vector<MPI_Datatype> stype_, rtype_;
  std::vector<MPI_Request> reqs_;
};

}  // namespace bench
