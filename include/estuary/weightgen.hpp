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
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
//    holds (by default as CDO: when the source grid is cyclic in longitude, i.e. global, and not
//    for a regional one, CDI's gridIsCircular; REMAP_EXTRAPOLATE=on/off is true/false here),
//    or when the iteration fails, the point gets CDO's fallback: the 4 nearest source
//    points weighted by 1/(d + 1e-14), masked ones kept with weight 0 (none at all when all 4
//    are masked). (A failed iteration uses |latitude| as the weight, as CDO does.)
// Each point's 4 links are stored in increasing source index, zero weights included, as CDO
// writes them. The result depends only on the points, not on the ranks or decompositions.
struct BilinearWeightOptions {
  std::optional<bool> extrapolate;  // unset: CDO's default, only for a cyclic (global) source
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

// Bilinear weights from a reduced Gaussian source grid as OASIS3-MCT's SCRIP computes them for a
// grid of type D (namcouple "BILINEAR D SCALAR LATITUDE bins": remap_bi with
// grid_search_bilin_reduced). The source is a sequence of rows, each a run of points of equal
// latitude with longitudes increasing (src.dims = {n} or {n, 1}); rows are taken from north to
// south (a grid stored south to north is searched as the same grid stored north to south:
// OASIS itself, given one, falls back to the 4 nearest points of the two southern rows for
// almost every target). For a target point between two rows n and n+1 (n > 1):
//  - in each row, the two points around its longitude (cyclic: the last and the first when it
//    is beyond either end), giving corners SW, SE (lower row), NE, NW (upper row);
//  - SCRIP's Newton iteration for (i, j) and weights (1-i)(1-j), i(1-j), ij, (1-i)j (OASIS stops
//    when it does not converge: estuary throws an Error naming the target point).
// Above the second row, below the last one, or with a masked corner: the 4 nearest points of the
// two rows (of the last row below it) by OASIS's angular distance, weighted 1/(d + 1e-14) over
// all four, masked ones then given 0 and the rest renormalised (their 4 links stored, zero
// weights included); all 4 masked: with nearest_fill, the nearest unmasked point of those rows,
// else of the grid. Each target's links are stored in increasing source index. Collective over
// comm; `src`, `dst` as for distance_weights. Throws estuary::Error (on every rank) when the
// source rows' latitudes are not strictly monotonic or there are fewer than two rows.
struct ReducedBilinearOptions {
  bool nearest_fill = true;  // OASIS's default; false for BILINEARNF
};
Links bilinear_weights_reduced(const Grid& src, const Grid& dst, MPI_Comm comm, const ReducedBilinearOptions& options = {});

// Bicubic weights from a reduced Gaussian source grid as OASIS3-MCT's SCRIP computes them for a
// grid of type D (namcouple "BICUBIC D SCALAR LATITUDE bins": remap_bicubic_reduced). Rows as for
// bilinear_weights_reduced (north to south whichever way the grid is stored); every row needs at
// least 4 points with longitudes increasing, and there must be at least 4 rows. For a target:
//  - the 4 rows around its latitude (fewer above the second row and below the last-but-one) and
//    in each the 4 points around its longitude (2 on each side, cyclic, longitudes shifted by
//    2 pi across the row's ends), masked ones left out;
//  - in each row the cubic (parabola, line) through its points at the target's longitude, then
//    the same across the rows at its latitude, in OASIS's own formulas (calcul_wght_irreg, _3, _2);
//  - OASIS's fallbacks: 1 point found: weight 1; 2 points: each weighted by its distance over
//    the sum of both (OASIS's formula, as it is); a single point in the outer rows dropped; a
//    single point in an inner row: the two nearest rows or points, linear across two rows of
//    several points, else 1/distance over the rows' polynomials; all 16 masked: with
//    nearest_fill, the nearest unmasked point of the rows around (OASIS's address range), else of
//    the grid, weight 1, else no link.
// One weight per link (OASIS's D bicubic writes num_wts = 1 and 16 links per target, the missing
// points with address 0, which estuary leaves out; zero weights of found points are kept). Each
// target's links in increasing source index. Collective over comm; `src`, `dst` as for
// distance_weights; the same on any number of ranks. Throws estuary::Error (on every rank) for
// rows not strictly ordered by latitude, fewer than 4 rows, or a row of fewer than 4 points or
// longitudes not increasing.
struct ReducedBicubicOptions {
  bool nearest_fill = true;  // OASIS's default; false for BICUBICNF
};
Links bicubic_weights_reduced(const Grid& src, const Grid& dst, MPI_Comm comm,
                              const ReducedBicubicOptions& options = {});

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
template <>
ConservNormalization from_name<ConservNormalization>(std::string_view name);  // estuary/names.hpp

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

// ---- YAC's methods, and the interpolation stack (src/remap/yac_weights.cpp, stack.cpp) ----
//
// YAC (DKRZ) defines its point methods for source values on the vertices of source cells.
// estuary's source values live at cell centres, so "a source cell" below is a cell of the
// centres' dual: on a logically rectangular source (dims {nx, ny}) the quad of centres
// (i,j),(i+1,j),(i+1,j+1),(i,j+1) holding the target, found by bilinear_weights' search (CDO's);
// on any other source the spherical triangle of three of the 8 centres nearest the target that
// holds it: the first triple, in increasing (nearest rank) order, whose barycentric coordinates
// are all >= -1e-12 (a Delaunay triangle in practice, but not guaranteed to be one). Distances
// are great-circle angles between unit vectors (YAC's get_vector_angle).

// YAC's `average` (interp_method_avg.c) over the vertices of the source cell holding the target.
//  arithmetic:  1/n each;
//  distance:    1/d_i normalised (a vertex within 1e-9 rad of the target takes weight 1);
//  barycentric: spherical barycentric coordinates b (A b = x with A's columns the vertices'
//               unit vectors): a triangle directly, a quad split into (0,1,2) and (0,2,3) and
//               the triangle whose smallest coordinate is largest taken; coordinates below 0
//               become 0, below 1e-4 are dropped, the rest normalised to sum 1 (YAC's great
//               circle cell branch; estuary's dual cells are not lon-lat boxes).
// partial_coverage false (YAC's default): a target whose cell has a masked vertex (with a
// weight, for barycentric) gets no links; true: masked vertices are dropped and the others
// renormalised (no links when all are masked). Each target's links are stored in the cell's
// vertex order, zero weights left out.
enum class AverageWeighting { arithmetic, distance, barycentric };
struct AverageOptions {
  AverageWeighting weighting = AverageWeighting::arithmetic;  // YAC's default
  bool partial_coverage = false;                              // YAC's default
};
Links average_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const AverageOptions& options = {});

// YAC's `nnn` (interp_method_nnn.c): the n nearest unmasked source centres (great-circle angle,
// ties to the smaller index; none beyond max_search_distance, degrees, 0: no limit); a target with
// fewer than n gets no links. Weights, in nearest-first order:
//  average:  1/n;
//  distance: 1/d_i normalised;
//  gauss:    exp(-d_i^2 / (c m^2)) normalised, m the mean angle between the n source points
//            (pairs), c = gauss_scale (YAC's default 0.1); inverse distance when their sum < 1e-9;
//  rbf:      A^-1 a with the Gaussian kernel k(d) = exp(-(d s)^2), A_ij = k(angle(x_i, x_j)),
//            a_i = k(angle(x_i, target)), s = n(n-1) / (2 sum_{i<j} angle(x_i, x_j)) / rbf_scale
//            (YAC's default scale 14.87973); not normalised (YAC does not). Solved by Gaussian
//            elimination with partial pivoting (YAC calls LAPACK, so last bits may differ).
// distance and gauss give weight 1 to a source within 1e-9 rad of the target; n = 1 is the
// nearest unmasked neighbour, weight 1, for every kind.
enum class NnnWeighting { average, distance, gauss, rbf };
struct NnnOptions {
  NnnWeighting weighting = NnnWeighting::average;  // YAC's default
  int n = 1;                                       // YAC's default
  double max_search_distance = 0.0;                // degrees; 0: none
  double gauss_scale = 0.1;
  double rbf_scale = 14.87973;
};
Links nnn_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const NnnOptions& options = {});

// YAC's creep fill: `steps` times (a negative number: until nothing changes), every unmasked
// target that has no link but has neighbours with links (at the start of the step) gets the
// mean of their rows: row_t = sum over those neighbours, in increasing index, of row_nb / m.
// The rows are compositions of the neighbours' rows, so the matrix stays one linear map of the
// source. Neighbours: on a target grid with dims {nx, ny}, (i+-1, j) and (i, j+-1), i cyclic
// when the first row's longitudes wrap; on any other target grid, the cells that share a corner
// (within 1e-9 on the unit sphere; corners needed). Collective over comm; `dst` this rank's
// target points (any decomposition; a point no rank holds is neither filled nor a neighbour),
// `links` this rank's links for them (any order); the new rows are appended for dst's points.
void creep_fill(const Grid& dst, MPI_Comm comm, Links& links, int steps);

// One stage of an interpolation stack.
struct StackStage {
  enum class Kind { conservative, bilinear, bicubic, distance, gaussian, average, nnn, nearest, creep, fixed };
  Kind kind = Kind::nnn;
  ConservativeOptions conservative;
  BilinearWeightOptions bilinear{false};  // in a stack the points outside the source go on to the next stage
  DistanceWeightOptions distance;
  GaussianWeightOptions gaussian;
  AverageOptions average;
  NnnOptions nnn;
  // conservative: fill targets only part-covered by unmasked source cells (YAC's
  // partial_coverage; its default false passes them to the next stage). Only the stack has it.
  bool partial_coverage = false;
  int creep_steps = -1;      // creep: steps (-1: until nothing changes, YAC's default; 0: none)
  double fixed_value = 0.0;  // fixed: the value of the targets left over
};
const char* name_of(StackStage::Kind k);  // "conservative", ...

// A stage as text gives it: its name and key=value parameters, not yet checked.
struct StageSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
  bool operator==(const StageSpec&) const = default;
};

// Splits a stack written as text, the namcouple extension's and the CLI's form: stages separated
// by '|', each a name and key=value parameters ("bilinear | nnn n=4 weighting=distance | fixed
// value=-999"); a '#' word ends the text. Throws estuary::Error (naming `where`) for an empty
// stage, a parameter without '=', or a stage starting with one.
std::vector<StageSpec> split_stack(const std::string& text, const std::string& where);
// split_stack, make_stage for each and check_stack.
std::vector<StackStage> stack_from_text(const std::string& text, const std::string& where);

// A stage from its name and parameters, as the YAML, the namcouple extension and the CLI give
// them: conservative (order 1|2, normalization fracarea|destarea|none), bilinear, bicubic,
// distance (n), gaussian (n, variance), average (weighting arithmetic|distance|barycentric,
// partial_coverage true|false), nnn (n, weighting average|distance|gauss|rbf, scale,
// max_search_distance), nearest, creep (steps), fixed (value). Throws estuary::Error naming
// `where` and the stage or parameter at fault.
StackStage make_stage(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params,
                      const std::string& where);
// Throws estuary::Error (naming `where`) for an empty stack, fixed before the last stage, or
// creep first (nothing to creep from).
void check_stack(const std::vector<StackStage>& stages, const std::string& where);
// The canonical text of a stack (names and every parameter), the same for equal stacks: a
// cached weight file's key.
std::string describe(const std::vector<StackStage>& stages);

// The stack's weights: the stages in order, each computing links only for the unmasked targets
// that no earlier stage reached (a target filled by stage k is never touched again); creep
// composes rows of filled targets; fixed, which must be last, leaves the rest without links and
// sets fixed_value (apply with RemapOptions::unmapped_value). Links come in dst's local order,
// each row contiguous, in the order the stage that filled it gives. `filled` counts the targets
// each stage filled (over every rank). Collective over comm; `src`, `dst` as for
// distance_weights (corners where a stage needs them).
struct StackWeights {
  Links links;
  bool has_fixed = false;
  double fixed_value = 0.0;
  std::vector<std::int64_t> filled;  // per stage
};
StackWeights stack_weights(const Grid& src, const Grid& dst, MPI_Comm comm, const std::vector<StackStage>& stages);

}  // namespace estuary
