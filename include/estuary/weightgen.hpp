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
// Parallelism (every method here: DISTWGT, GAUSWGT, bilinear, bicubic, fill_nearest): no rank
// holds the whole source grid. The source points are dealt to the owners of a fixed lon-lat
// partition of the sphere (bins), which count them; each rank then fetches the bins that can
// hold the nearest points of the destination points it holds (a bound from the counts), builds
// a 3-D k-d tree over them and searches it; the quad methods also fetch, by index, the grid
// neighbours of each point's nearest source point. Set-up memory per rank is O(its share plus
// a halo). The result depends only on the points, not on the number of ranks or the
// decompositions: every point that can be among the answers is always fetched.
#pragma once

#include <mpi.h>

#include <array>
#include <vector>

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
  // bicubic_weights only: also fold the gradients into BicubicWeights::links (the matrix Remap
  // applies; about 9 links a value link). Off when only the value links and the 4 columns are
  // wanted, e.g. to write a SCRIP file as cdo genbic does: links is then left empty.
  bool fold = true;
};

// Collective over comm; `src` and `dst` as for distance_weights. Throws estuary::Error (on every
// rank) when the source grid is not two-dimensional, and as distance_weights does.
Links bilinear_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options = {});
Links bilinear_weights(const GridGen& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options = {});

// Bicubic weights (CDO genbic/remapbic, SCRIP, OASIS's SCRIPR BICUBIC): the quads of
// bilinear_weights' search, and per link CDO's four weights (bicubic_set_weights): the value and
// the weights of the source gradients across i, across j and crosswise; where the search fails
// CDO's distance-weighted fallback, with no gradient terms. The result depends only on the
// points, not on the ranks or decompositions.
struct BicubicWeights {
  Links value;                                  // the links, weight = the value column
  std::vector<std::array<double, 4>> columns;   // per link of `value`: CDO's 4 weight columns
  Links links;  // folded with CDO's source gradients into one matrix, as `cdo remap` applies them
};
BicubicWeights bicubic_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const BilinearWeightOptions& options = {});

// OASIS3-MCT's GAUSWGT (SCRIP's remap_dist_gaus_wgt): the n nearest source points by angular
// distance d (ties to the smaller index), masked ones dropped, weighted by
// 1 / (exp(d^2 / (2 sigma^2)) + epsilon) and normalised, where sigma^2 = variance x the mean
// distance between consecutive source points (in grid order, OASIS's grid_dist_average). A
// target whose n nearest are all masked gets no link (fill_nearest gives it OASIS's nearest
// unmasked point). Collective over comm; `src`, `dst` as for distance_weights.
struct GaussianWeightOptions {
  int neighbors = 4;
  double variance = 1.0;  // OASIS's namcouple $VAR: the multiplier of the mean distance squared
};
Links gaussian_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const GaussianWeightOptions& options = {});

// OASIS3-MCT's nearest-neighbour fill (the default of SCRIPR DISTWGT, BILINEAR, BICUBIC and
// GAUSWGT; their "NF" forms turn it off): every unmasked destination point of `dst` that has no
// link in `links` gets one, weight 1, to the nearest unmasked source point (chord distance, ties
// to the smaller index, as the searches above). Collective over comm; `src` and `dst` as for
// distance_weights, `links` this rank's links for dst's points.
void fill_nearest(const Grid& src, const Grid& dst, MPI_Comm comm, Links& links);

// Conservative weights (SCRIP CONSERV, CDO remapcon/gencon, YAC's conservative method): the
// weight of source cell s for destination cell d is the area of their intersection on the
// sphere over a normalising area. Cells are polygons from their corners; edges are great-circle
// arcs, except that on grids of the lon-lat kinds (and on any 4-corner grid whose every cell is
// a lon-lat box, which is CDO's test too) the edges between corners of equal latitude follow
// that circle of latitude. Intersection areas are exact up to rounding for both edge kinds.
//
// Normalisation, as SCRIP and CDO name it, with A_ds the intersection area, A_d the destination
// cell's area and F_d the sum of A_ds over the unmasked source cells:
//   fracarea: w = A_ds / F_d  (a constant maps to itself; CDO's default)
//   destarea: w = A_ds / A_d  (partly covered cells get partial sums)
//   none:     w = A_ds        (steradians)
// Masked source cells get no links; masked destination cells get no links. Links of an
// intersection whose area is below 1e-15 of the destination cell's are dropped (touching cells).
//
// Second order (SCRIP's CONSERV SECOND, YAC's 2nd order): the source field is taken as linear
// in each source cell, f(x) = f_s + g_s . (x - c_s), with c_s the cell's centroid and g_s a
// least-squares gradient from the centroids of its unmasked edge neighbours (logically
// rectangular source grids: i +- 1, j +- 1, cyclic in i when the grid wraps). The gradient's
// coefficients are folded into the weights, so the result is one ordinary sparse matrix (one
// weight per link, neighbours of the intersecting cells included) that every reader applies.
//
// Parallelism: each rank handles the destination cells it holds. Bounding caps of the cells
// are dealt to the owners of a fixed lon-lat partition of the sphere (round robin), which pair
// the overlapping ones; each rank then fetches the source cells it needs with the plan engine.
// No rank holds either whole grid. The result depends only on the cells, not on the number of
// ranks or the decompositions (each destination cell's links are computed alone, in increasing
// source index).
enum class ConservNormalization { fracarea, destarea, none };
const char* name_of(ConservNormalization n);

struct ConservativeOptions {
  int order = 1;  // 1 or 2
  ConservNormalization normalization = ConservNormalization::fracarea;
  // false: every edge a great-circle arc, whatever the grid kind.
  bool latitude_edges = true;
  // OASIS's FRACNNEI: a valid destination cell that no unmasked source cell overlaps takes the
  // value of the nearest unmasked source cell (by centre) instead of none.
  bool nearest_for_uncovered = false;
};

struct ConservativeWeights {
  Links links;                  // for dst's points, in dst's local order (FRACNNEI's last)
  std::vector<double> dst_area; // per dst point: its cell's area (steradians)
  std::vector<double> dst_frac; // per dst point: F_d / A_d, the part covered by unmasked source
  // This rank's share of the work: seconds in the search (caps dealt and paired), in fetching
  // the source cells, and in the intersections; and the (destination, source) pairs it clipped.
  double search_seconds = 0, fetch_seconds = 0, intersect_seconds = 0;
  std::int64_t pairs = 0;
};

// Collective over comm; `src` and `dst` as for distance_weights, both with corners. Throws
// estuary::Error (on every rank) for grids without corners, order not 1 or 2, second order on
// a source grid that is not two-dimensional, and as distance_weights does.
ConservativeWeights conservative_weights(const Grid& src, const Grid& dst, MPI_Comm comm,
                                         const ConservativeOptions& options = {});

}  // namespace estuary
