// OASIS partitions (ig_paral arrays) as estuary decompositions.
#include "estuary/oasis_partition.hpp"

#include <algorithm>
#include <string>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"

namespace estuary {

using i64 = std::int64_t;

Decomp oasis_partition(std::span<const i64> p, i64 global_size) {
  const auto bad = [&](const std::string& what, const std::string& fix = {}) {
    return Error(what, "OASIS partition (ig_paral[0] = " + (p.empty() ? std::string("?") : std::to_string(p[0])) + ")", fix);
  };
  const auto need = [&](std::size_t n, const char* form) {
    if (p.size() < n)
      throw bad("has " + std::to_string(p.size()) + " entries, the " + form + " form needs " + std::to_string(n),
                "see the OASIS3-MCT user guide, oasis_def_partition");
  };
  const auto in_range = [&](i64 off, i64 len, const std::string& what) {
    if (off < 0 || len < 0 || off + len > global_size)
      throw bad(what + " covers [" + std::to_string(off) + ", " + std::to_string(off + len) + ") outside the grid's " +
                    std::to_string(global_size) + " points",
                "offsets are 0-based and the global size must be the grid's");
  };
  if (p.empty()) throw bad("is empty", "give at least the partition kind");
  switch (p[0]) {
    case 0: {  // serial: the whole grid on this rank
      need(3, "serial");
      if (p[2] != global_size)
        throw bad("serial size " + std::to_string(p[2]) + " differs from the global size " + std::to_string(global_size));
      return Decomp::stripes(global_size, {{0, global_size, 1}});
    }
    case 1: {  // apple: one contiguous segment
      need(3, "apple");
      in_range(p[1], p[2], "the segment");
      return Decomp::stripes(global_size, {{p[1], p[2], 1}});
    }
    case 2: {  // box: nx x ny sub-box of a grid global_nx wide, starting at offset
      need(5, "box");
      const i64 off = p[1], nx = p[2], ny = p[3], gnx = p[4];
      if (gnx <= 0 || nx < 0 || ny < 0 || off < 0 || off % gnx + nx > gnx)
        throw bad("box offset " + std::to_string(off) + ", " + std::to_string(nx) + " x " + std::to_string(ny) +
                      " does not fit rows of " + std::to_string(gnx) + " points");
      std::vector<Stripe> rows;
      for (i64 j = 0; j < ny; ++j) {
        in_range(off + j * gnx, nx, "box row " + std::to_string(j));
        rows.push_back({off + j * gnx, nx, 1});
      }
      return Decomp::stripes(global_size, std::move(rows));
    }
    case 3: {  // orange: several segments
      need(2, "orange");
      const i64 nseg = p[1];
      need(static_cast<std::size_t>(2 + 2 * std::max<i64>(nseg, 0)), "orange");
      std::vector<Stripe> segs;
      for (i64 s = 0; s < nseg; ++s) {
        const i64 off = p[static_cast<std::size_t>(2 + 2 * s)], len = p[static_cast<std::size_t>(3 + 2 * s)];
        in_range(off, len, "segment " + std::to_string(s + 1));
        segs.push_back({off, len, 1});
      }
      return Decomp::stripes(global_size, std::move(segs));
    }
    case 4: {  // points: an explicit list
      need(2, "points");
      const i64 n = p[1];
      need(static_cast<std::size_t>(2 + std::max<i64>(n, 0)), "points");
      std::vector<i64> idx(p.begin() + 2, p.begin() + 2 + n);
      for (std::size_t k = 0; k < idx.size(); ++k)
        if (idx[k] < 0 || idx[k] >= global_size)
          throw bad("point " + std::to_string(k + 1) + " is " + std::to_string(idx[k]) + ", outside [0, " +
                    std::to_string(global_size) + ")");
      return Decomp::indices(global_size, std::move(idx));
    }
    default:
      throw bad("unknown partition kind " + std::to_string(p[0]), "use 0 serial, 1 apple, 2 box, 3 orange, 4 points");
  }
}

i64 oasis_partition_end(std::span<const i64> p) {
  const auto bad = [&](const std::string& what) {
    return Error(what, "OASIS partition (ig_paral[0] = " + (p.empty() ? std::string("?") : std::to_string(p[0])) + ")",
                 "see the OASIS3-MCT user guide, oasis_def_partition");
  };
  const auto need = [&](i64 n, const char* form) {
    if (static_cast<i64>(p.size()) < n)
      throw bad("has " + std::to_string(p.size()) + " entries, the " + form + " form needs " + std::to_string(n));
  };
  if (p.empty()) throw bad("is empty");
  const auto at = [&](i64 i) { return p[static_cast<std::size_t>(i)]; };
  // As MCT finds the global size: the largest index end; an empty part adds nothing.
  i64 end = 0;
  switch (p[0]) {
    case 0: need(3, "serial"); return std::max<i64>(at(2), 0);                      // {0, 0, n}
    case 1: need(3, "apple"); return at(2) > 0 ? at(1) + at(2) : 0;                 // {1, offset, n}
    case 2:                                                                          // {2, offset, nx, ny, ldx}
      need(5, "box");
      return at(2) > 0 && at(3) > 0 ? at(1) + (at(3) - 1) * at(4) + at(2) : 0;
    case 3:                                                                          // {3, nseg, off, n, ...}
      need(2, "orange");
      need(2 + 2 * std::max<i64>(at(1), 0), "orange");
      for (i64 k = 0; k < at(1); ++k)
        if (at(3 + 2 * k) > 0) end = std::max(end, at(2 + 2 * k) + at(3 + 2 * k));
      return end;
    case 4:                                                                          // {4, n, i1, ...}
      need(2, "points");
      need(2 + std::max<i64>(at(1), 0), "points");
      for (i64 k = 0; k < at(1); ++k) end = std::max(end, at(2 + k) + 1);
      return end;
    default:
      throw Error("unknown partition kind " + std::to_string(p[0]), "OASIS partition",
                  "use 0 serial, 1 apple, 2 box, 3 orange, 4 points");
  }
}

i64 oasis_partition_global_size(std::span<const i64> p, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return oasis_partition_end(p);
  i64 end = 0;
  // Every rank sees a bad array of any rank (and none enters the allreduce alone).
  detail::agree(comm, [&] { end = oasis_partition_end(p); });
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &end, 1, MPI_INT64_T, MPI_MAX, comm),
                    "MPI_Allreduce (oasis_partition_global_size)");
  return end;
}

}  // namespace estuary
