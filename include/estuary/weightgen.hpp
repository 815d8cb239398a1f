// Weight generation on the sphere: n-nearest-neighbour inverse-distance weights (OASIS DISTWGT,
// CDO remapdis/gendis) and bilinear weights (SCRIP, CDO remapbil/genbil; see bilinear_weights),
// computed in parallel for the destination points each rank holds.
//
// Distances are chord lengths between unit vectors (CDO's k-d tree metric), so the n nearest
// are also the n nearest by great-circle distance; as in CDO 2.1, the squared chord is rounded
// to single precision before its square root is taken (this reproduces CDO's weights exactly). For a destination point the weights are CDO's:
// w_i = (1/d_i) / sum_j (1/d_j) over the kept neighbours, a zero distance counting as 1e-14
// (so a coinciding source point takes a weight of 1 - O(1e-14), the others O(1e-14) each).
// Neighbours equally far within 1e-12 are taken in increasing source index, as CDO does (CDO
// looks at only 2n candidates from its tree, so with more than 2n points tied at the n-th
// distance it may pick others; here all tied points are considered).
//
// Parallelism: the source points (centres and mask, 32 bytes a point) are gathered on every
// rank, which builds a 3-D k-d tree over them; each rank then searches only for the
// destination points it holds, and returns their links. The result depends only on the points,
// not on the number of ranks or the decompositions.
#pragma once

#include <mpi.h>

#include "estuary/grid.hpp"
#include "estuary/weights.hpp"

namespace estuary {

enum class SourceMaskRule {
  // CDO gendis/remapdis and SCRIP: take the n nearest source points, masked or not, then drop
  // the masked ones (a destination point surrounded by land gets fewer links, or none).
  drop_after_search,
  // The n nearest unmasked source points (every destination point gets n links while the
  // source has n unmasked points).
  nearest_unmasked,
};

struct DistanceWeightOptions {
  int neighbors = 4;  // CDO's default for remapdis/gendis
  SourceMaskRule mask_rule = SourceMaskRule::drop_after_search;
};

// Collective over comm. `src`: this rank's share of the source grid (global indices in
// src.points; together the ranks hold every source point at least once, repeats allowed).
// `dst`: the destination points this rank wants links for (any decomposition; masked points
// get no links). Returns links for dst's points in dst's local order, each point's links from
// the nearest source point outwards. Throws estuary::Error (on every rank) for a source point
// no rank holds, grids whose sizes disagree between ranks, or neighbors < 1.
Links distance_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options = {});

// As above with the source grid given by its recipe: each rank builds a contiguous block.
Links distance_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const DistanceWeightOptions& options = {});

// Bilinear weights (SCRIP, CDO remapbil/genbil) for a logically rectangular source grid
// (src.dims = {nx, ny}: lon-lat, Gaussian or curvilinear such as tripolar), computed as CDO 2.1
// does for a curvilinear source:
//  - the source point nearest to the destination point (CDO's distance, ties to the smaller
//    index) names up to four candidate quads of centres (i,j),(i+1,j),(i+1,j+1),(i,j+1) around
//    it, tried in CDO's order with SCRIP's cross-product test in lon/lat (radians, longitudes
//    brought into one 2 pi interval; the grid wraps in i when it is cyclic);
//  - in the quad found, SCRIP's Newton iteration (at most 100 steps, to 1e-10) gives the
//    bilinear coordinates (x, y) and the weights (1-x)(1-y), x(1-y), xy, (1-x)y;
//  - a quad with a masked corner gives the point no links;
//  - when no quad holds the point (near the poles, beyond the grid's edge) and `extrapolate`
//    is set, or when the iteration fails, the point gets CDO's fallback: the 4 nearest source
//    points weighted by 1/(d + 1e-14), masked ones kept with weight 0 (none at all when all 4
//    are masked). (A failed iteration uses |latitude| as the weight, as CDO does.)
// Each point's 4 links are stored in increasing source index, zero weights included, as CDO
// writes them. The result depends only on the points, not on the ranks or decompositions.
struct BilinearWeightOptions {
  bool extrapolate = true;  // CDO's default for a global source grid
};

// Collective over comm; `src` and `dst` as for distance_weights. Throws estuary::Error (on every
// rank) when the source grid is not two-dimensional, and as distance_weights does.
Links bilinear_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options = {});
Links bilinear_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options = {});

}  // namespace estuary
