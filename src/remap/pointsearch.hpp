// The source-point searches the weight generators share (weightgen.cpp, yac_weights.cpp): every
// source centre gathered on every rank, CDO's n-nearest search over a k-d tree of them, and CDO's
// search for the quad of source centres around a point of a logically rectangular grid.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "estuary/grid.hpp"
#include "kdtree.hpp"
#include "search.hpp"
#include "sphere.hpp"

namespace estuary::detail {

// CDO's conventions, shared by both searches.
constexpr double kCmpTol = 1e-12;  // distances equal within it tie (then the smaller index wins)
constexpr double kPi = M_PI, kPi2 = 2.0 * M_PI, kPih = 0.5 * M_PI;
// The distance as CDO 2.1's point search returns it, from the squared chord.
double cdo_distance(double sq);
// CDO's neighbour order: nearer by more than kCmpTol, or as near and of a smaller index.
bool distance_is_less(double d, double dx, std::int64_t a, std::int64_t ax);
// knnWeightsType::storeDistance: candidate c at distance d into the nn best so far (addr, dist,
// nearest first), ordered by distance_is_less on key(c) (the global index); no place, no change.
template <class Key>
void store_nearest(std::int64_t c, double d, const Key& key, std::vector<std::int64_t>& addr, std::vector<double>& dist) {
  const std::size_t nn = addr.size();
  const std::int64_t kc = key(c);
  for (std::size_t i = 0; i < nn; ++i)
    if (distance_is_less(d, dist[i], kc, key(addr[i]))) {
      for (std::size_t j = nn - 1; j > i; --j) {
        addr[j] = addr[j - 1];
        dist[j] = dist[j - 1];
      }
      addr[i] = c;
      dist[i] = d;
      return;
    }
}
// CDO's coordinates: radians, longitudes in [0, 2 pi], latitudes clamped.
double cdo_lon(double deg);
double cdo_lat(double deg);
// SCRIP's point-in-quad test on the cross products (lons brought into one 2 pi interval).
bool quad_cross_products(double plon, double plat, double (&lons)[4], const double (&lats)[4]);

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
bool is_cyclic(double lon0, double lon1, double lon_last, std::int64_t nx);

// Collective over comm: whether CDO (CDI's gridIsCircular) takes a logically rectangular grid
// (dims {nx, ny}) as cyclic in i — its quads then wrap from column nx-1 to 0, and bilinear and
// bicubic extrapolate by default. Lon-lat and Gaussian grids: the first row's test above. Any
// other (a curvilinear or SCRIP-file grid, as CDO reads those): with corners, every row's first
// and last cells share a corner; without, the last centre is one increment short of the first in
// more than half the rows — so a NEMO grid whose first and last columns repeat columns nx-2 and
// 1 (its halo) is cyclic, as for CDO. Nothing else is cyclic (unstructured grids, one column).
bool cdo_is_cyclic(const Grid& src, MPI_Comm comm);

// CDO's quad search over a logically rectangular source of nx x ny centres (bilinear_weights):
// the quad (i,j),(i+1,j),(i+1,j+1),(i,j+1) of centres holding a point, tried around the nearest
// centre with SCRIP's cross-product test in lon/lat, cyclic in i when the grid wraps.
// The constructor is collective: it holds only the source points near the destination's valid
// points (search.hpp) and the 3 x 3 block of grid neighbours around each one's nearest centre,
// fetched by index, so no rank holds the whole source grid.
class QuadSearch {
 public:
  QuadSearch(const Grid& src, const Grid& dst, MPI_Comm comm, const char* where);
  ~QuadSearch();
  // True with the quad's global indices and CDO's radian coordinates of its corners when one
  // holds the point (a destination point of the constructor's grid).
  bool find(double lon_deg, double lat_deg, std::int64_t (&idx)[4], double (&qlon)[4], double (&qlat)[4],
            std::vector<std::int64_t>& cand, std::vector<std::int64_t>& addr, std::vector<double>& dist) const;
  // The source points held; find's indices are found with source().position(g).
  const LocalSource& source() const { return s_; }

 private:
  LocalSource s_;
  std::int64_t nx_, ny_;
  bool cyclic_ = false;
  std::unique_ptr<KdTree> tree_;
};

}  // namespace estuary::detail
