// Runoff mapping: each source point's value spread over nearby unmasked target points, so that
// the area-weighted total is conserved. OASIS3-MCT 5's SCRIPR LOCCUNIF / LOCCDIST / LOCCGAUS
// and YAC's source point mapping (SPMAP) are the two forms (docs/remap.md, "Runoff mapping").
//
// For every unmasked source point s, a set T(s) of unmasked target points is chosen:
//  - OASIS (neighbors): the `neighbors` nearest unmasked target points (chord distance, ties to
//    the smaller index). Every source point reaches the nearest ocean point at least.
//  - YAC (spread_distance >= 0): the nearest unmasked target point t0, and every unmasked target
//    point within spread_distance of t0 (YAC spreads from the nearest target point; it walks the
//    target cells' edges, estuary takes every point within the distance). A source point farther
//    than max_search_distance from every unmasked target point gets no link (0: no limit).
// Within T(s), the shares u_st (summing to 1) are
//    uniform:  1 / |T(s)|                                      (LOCCUNIF, YAC AVG)
//    distance: (1 / d_st) / sum (1 / d_st'), d = 0 read as 1e-14 (LOCCDIST, YAC DIST)
//    gaussian: 1 / (exp(d_st^2 / (2 sigma^2)) + eps), normalised (LOCCGAUS), with
//              sigma^2 = variance x the mean angle between consecutive target points
//              (OASIS's GAUSWGT formula, with the target grid's spacing)
// where d_st is the angle (radians) between the source point and the target point. The weight of
// the link (t, s) is u_st scaled as YAC's scale types say:
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
  double variance = 1.0;         // gaussian: OASIS's $VAR, the multiplier of the mean spacing squared
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
