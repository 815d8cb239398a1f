// The distributed source search shared by the point-based weight generators (DISTWGT, GAUSWGT,
// BILINEAR, BICUBIC, the nearest-neighbour fill): each rank obtains only the source points near
// its own destination points, never the whole grid.
//
// How: the sphere is cut into a fixed lon-lat grid of bins (the same on every rank, sized by the
// source grid alone). Every source point goes to the owner of its bin (bin b: rank b mod p), and
// the per-bin counts (all points, unmasked points) are summed on every rank. For each bin that
// holds destination points, a rank widens a block of bins around it until the block holds k
// counted points: their farthest possible distance bounds the k-th nearest of any query in the
// bin, and every bin within that bound (plus the bins' own radii) is fetched from its owner.
// A k-d tree over the fetched points then answers k-nearest and radius queries exactly as a tree
// over the whole grid would: every point that can be among the answers is there.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "estuary/grid.hpp"
#include "estuary/redist.hpp"
#include "kdtree.hpp"
#include "sphere.hpp"

namespace estuary::detail {

// Source points held by this rank, by position: in increasing global index as gathered, then
// those fetched by index appended (positions once handed out never change).
struct LocalSource {
  std::vector<std::int64_t> index;
  std::vector<sphere::Vec3> xyz;  // unit_vector(lon, lat)
  std::vector<double> lon, lat;   // degrees, as the source grid gives them
  std::vector<char> valid;
  std::int64_t total = 0, total_valid = 0;  // over the whole source grid (every rank the same)

  std::size_t size() const { return index.size(); }
  // The position of global index g, or size() when it is not held. (Inline: the quad searches
  // call it for every corner they read.)
  std::size_t position(std::int64_t g) const {
    if (!row_start.empty()) {  // rows of a logically rectangular grid: search one row only
      const std::int64_t j = g / nx;
      if (j < 0 || j + 1 >= static_cast<std::int64_t>(row_start.size())) return size();
      const std::size_t lo = row_start[static_cast<std::size_t>(j)], hi = row_start[static_cast<std::size_t>(j) + 1];
      if (hi - lo == static_cast<std::size_t>(nx)) return order[lo + static_cast<std::size_t>(g - j * nx)];
      return find_in(lo, hi, g);
    }
    return find_in(0, sorted.size(), g);
  }
  // Rebuilds the lookup of position(); with the rows of a logically rectangular grid (nx points
  // a row, ny rows) it searches one row only, or none when the row is held whole.
  void reindex(std::int64_t row_length = 0, std::int64_t rows = 0);

  std::vector<std::size_t> order;       // positions in increasing global index
  std::vector<std::int64_t> sorted;     // index[order[k]]
  std::vector<std::size_t> row_start;   // per row j, the first k with sorted[k] >= j * nx
  std::int64_t nx = 0;

 private:
  std::size_t find_in(std::size_t lo, std::size_t hi, std::int64_t g) const {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(lo), last = sorted.begin() + static_cast<std::ptrdiff_t>(hi);
    const auto it = std::lower_bound(first, last, g);
    return it != last && *it == g ? order[static_cast<std::size_t>(it - sorted.begin())] : size();
  }
};

// Collective. Checks the source's indices (every rank throws alike, through agree): in range,
// and every point held by some rank. Returns every source point that can be among the k nearest
// (all points counted, or only unmasked ones when `unmasked_only`) of any query, ties within a
// relative 1e-6 of the k-th distance included. With `beyond` > 0 (radians), also every point
// within `beyond` of those (a radius search around a query's nearest point, as runoff's SPMAP).
LocalSource gather_near(const Grid& src, const std::vector<sphere::Vec3>& queries, std::size_t k, bool unmasked_only,
                        MPI_Comm comm, const char* where, double beyond = 0);

// The unit vectors of the destination points to search for (the valid ones, or those `want`
// selects), in local order.
std::vector<sphere::Vec3> queries_of(const Grid& dst, const std::vector<char>* want = nullptr);

// A k-d tree over the positions of s (those unmasked only when asked).
KdTree tree_of(const LocalSource& s, bool unmasked_only);

// The nn nearest points of `tree` (built over positions of s) to q in CDO's order (addr[i]
// INT64_MAX, dist[i] DBL_MAX when the tree has fewer): CDO's distance, ties within 1e-12 in
// increasing global index. addr holds positions in s.
void nearest(const KdTree& tree, const LocalSource& s, const sphere::Vec3& q, std::size_t nn,
             std::vector<std::int64_t>& cand, std::vector<std::int64_t>& addr, std::vector<double>& dist);

// Collective: the transfer of source points from the ranks that hold them (a point held by
// several ranks comes from the lowest) to those that need them (`need`: global indices).
Redist fetch_plan(const Grid& src, const std::vector<std::int64_t>& need, MPI_Comm comm);

// Collective: adds to s the source points of `need` (global indices, any order) it lacks,
// fetched by index from the ranks that hold them.
void fetch_by_index(const Grid& src, LocalSource& s, std::vector<std::int64_t> need, MPI_Comm comm);

}  // namespace estuary::detail
