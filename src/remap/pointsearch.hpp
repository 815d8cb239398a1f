// The source-point searches the weight generators share (weightgen.cpp, yac_weights.cpp): every
// source centre gathered on every rank, CDO's n-nearest search over a k-d tree of them, and CDO's
// search for the quad of source centres around a point of a logically rectangular grid.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "estuary/grid.hpp"
#include "kdtree.hpp"
#include "sphere.hpp"

namespace estuary::detail {

// Every source point, gathered from the ranks' shares: unit vectors and mask by global index.
struct SourcePoints {
  std::vector<sphere::Vec3> xyz;
  std::vector<char> valid;
  std::vector<double> lon, lat;  // degrees, by global index
};

// Collective over comm. Throws estuary::Error (`where` names the caller) for a source point no
// rank holds or an index outside the grid.
SourcePoints gather_source(const Grid& src, MPI_Comm comm, const char* where);

// The nn nearest points of `tree` to q in CDO's order (addr[i] INT64_MAX, dist[i] DBL_MAX when
// the tree has fewer): CDO's single-precision chord distance, ties within 1e-12 to the smaller index.
void nearest(const KdTree& tree, const std::vector<sphere::Vec3>& xyz, const sphere::Vec3& q, std::size_t nn,
             std::vector<std::int64_t>& cand, std::vector<std::int64_t>& addr, std::vector<double>& dist);

// CDO's gridIsCircular for the first row of an nx-wide grid (longitudes in degrees, by global
// index): one more step of the first longitude increment after the last point comes back to
// the first point.
bool is_cyclic(const std::vector<double>& lon_deg, std::int64_t nx);

// CDO's quad search over a logically rectangular source of nx x ny centres (bilinear_weights):
// the quad (i,j),(i+1,j),(i+1,j+1),(i,j+1) of centres holding a point, tried around the nearest
// centre with SCRIP's cross-product test in lon/lat, cyclic in i when the grid wraps.
class QuadSearch {
 public:
  QuadSearch(const SourcePoints& s, std::int64_t nx, std::int64_t ny);
  ~QuadSearch();
  // True with the quad's indices and CDO's radian coordinates of its corners when one holds the point.
  bool find(double lon_deg, double lat_deg, std::int64_t (&idx)[4], double (&qlon)[4], double (&qlat)[4],
            std::vector<std::int64_t>& cand, std::vector<std::int64_t>& addr, std::vector<double>& dist) const;
  const KdTree& tree() const { return *tree_; }

 private:
  const SourcePoints& s_;
  std::int64_t nx_, ny_;
  bool cyclic_ = false;
  std::vector<double> clon_, clat_;
  std::unique_ptr<KdTree> tree_;
};

}  // namespace estuary::detail
