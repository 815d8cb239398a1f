// Runoff mapping: each source point's value spread over nearby unmasked target points, so that
// the area-weighted total is conserved. OASIS3-MCT 5's SCRIPR LOCCUNIF / LOCCDIST / LOCCGAUS
// and YAC's source point mapping (SPMAP) are the two forms (docs/remap.md, "Runoff mapping").
//
// For every unmasked source point s, a set T(s) of unmasked target points is chosen:
//  - OASIS (neighbors = n; remap_locc_wgt in OASIS3-MCT 5's SCRIP): the n nearest unmasked target
//    points by OASIS's angular distance (acos of the cosine from sines and cosines), searched in
//    increasing index with OASIS's rule: a point replaces a kept one only when strictly nearer
//    (ties to the smaller index), and a point coinciding (within 1e-7) with a kept neighbour next
//    to its place is skipped. Every source point reaches the nearest ocean point at least.
//  - YAC (spread_distance >= 0): the nearest unmasked target point t0 (as above), and every
//    unmasked target point within spread_distance of t0 (YAC spreads from the nearest target
//    point; it walks the target cells' edges, estuary takes every point within the distance).
//    A source point farther than max_search_distance from every unmasked target point gets no
//    link (0: no limit).
// The shares u_st of the targets, with d_st the angle between s and t (radians):
//    uniform:  1 / |T(s)|                                      (LOCCUNIF, YAC avg)
//    distance: OASIS: (1 / d_st) / sum_t' (1 / d_st'), d below eps read as eps  (LOCCDIST)
//              YAC:   the same, d below 1e-14 read as 1e-14   (YAC dist)
//    gaussian: OASIS only (LOCCGAUS): d replaced by exp(d^2 / (2 sigma^2)) in LOCCDIST's formula,
//              sigma^2 = variance x (the mean angle between the n neighbours)^2, when n >= 2 and
//              every d < 0.01 rad; otherwise LOCCDIST's weights (as remap_locc_wgt does).
// (OASIS divides by d_st sum (1 / (d_st' + eps)): its shares sum to 1 only within eps / d, so
// estuary normalises exactly; the weights differ by that relative amount.) The weight of the link (t, s) is u_st scaled as YAC's scale types say:
//    fracarea:   u_st A_s / A_t  (conservative: sum_t A_t f_t = sum_s A_s f_s; OASIS's LOCC*)
//    srcarea:    u_st A_s        (a flux per cell in, an amount per target cell out)
//    invtgtarea: u_st / A_t      (an amount per source cell in, a flux out)
//    none:       u_st            (amounts in and out: sum_t f_t = sum_s f_s)
// with A the cells' areas (Grid::area, or from the corners when not given).
//
// Parallelism: both grids' centres, masks and areas are gathered on every rank (40 bytes a
// point); each rank computes the links of a block of source points, and the links are sent to
// the ranks holding their target points. Each link is computed from the gathered grids alone, so
// the result is bit-identical on any number of ranks and for any decomposition.
#pragma once

#include <mpi.h>

#include "estuary/grid.hpp"
#include "estuary/weights.hpp"

namespace estuary {

enum class RunoffWeighting { uniform, distance, gaussian };
enum class RunoffScaling { fracarea, srcarea, invtgtarea, none };
const char* name_of(RunoffWeighting w);
const char* name_of(RunoffScaling s);

struct RunoffOptions {
  int neighbors = 1;             // OASIS: the nearest unmasked target points each source reaches
  double spread_distance = -1;   // degrees; >= 0: YAC's SPMAP spread around the nearest target
  double max_search_distance = 0;  // degrees, with spread_distance: 0 is no limit (YAC's default)
  RunoffWeighting weighting = RunoffWeighting::uniform;
  double variance = 1.0;         // gaussian (n nearest only): OASIS's $VAR
  RunoffScaling scaling = RunoffScaling::fracarea;
};

// Collective over comm. `src`, `dst`: this rank's share of each grid (global indices in
// .points; together the ranks hold every point at least once, repeats allowed; areas or corners
// needed unless scaling is none). Returns the links of dst's points in dst's local order, each
// point's links in increasing source index. Throws estuary::Error (on every rank) for bad options,
// a grid without areas or corners when they are needed, a point no rank holds, or a target grid
// with no unmasked point while a source point is unmasked.
Links runoff_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const RunoffOptions& options = {});

}  // namespace estuary
