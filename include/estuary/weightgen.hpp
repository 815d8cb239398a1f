// Weight generation on the sphere: n-nearest-neighbour inverse-distance weights (OASIS DISTWGT,
// CDO remapdis/gendis), computed in parallel for the destination points each rank holds.
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

}  // namespace estuary
