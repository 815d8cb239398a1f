// Multi-weight SCRIP files (num_wgts 3 or 4): the source-grid gradients CDO multiplies the
// extra weight columns by, written as fixed stencils so that a file's links can be folded into
// one plain matrix at read time.
//
// CDO (`cdo remap,TARGET,weights.nc`, 2.1.1; remap_gradients in its remap_vars.cc, from SCRIP's
// bicubic driver) applies a link (dst, src, w[0..k-1]) as
//   y[dst] += w0 x[src] + w1 g1[src] + w2 g2[src] (+ w3 g3[src] when k = 4)
// where g1, g2, g3 are differences of x over the logically rectangular source grid (nx, ny):
// g1 across i (periodic), g2 across j (one-sided at the first and last row), g3 the cross
// difference, each skipping masked neighbours. They are index differences, not derivatives in
// radians: CDO uses the same ones for bicubic (k = 4) and for second-order conservative
// weights (k = 3, gencon2), so no coordinates are needed. With the mask fixed, each g is linear
// in x, so W = W0 + W1 G1 + W2 G2 + W3 G3 is one sparse matrix with a wider source stencil,
// and the whole Remap machinery applies it unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "estuary/weights.hpp"

namespace estuary::detail {

// One gradient at one source point: sum of coeff[t] * x[point[t]] over its `count` terms.
struct GradientStencil {
  int count = 0;
  std::int64_t point[4] = {0, 0, 0, 0};
  double coeff[4] = {0, 0, 0, 0};
};

// The three gradients at point n (0-based, i fastest) of an nx x ny grid, as CDO computes them;
// all empty when n itself is masked (CDO sets its gradients to 0). `valid` is asked only about n
// and its eight neighbours (i wrapped, j clamped): see gradient_neighbourhood.
struct GradientStencils {
  GradientStencil g[3];  // g1 (i direction), g2 (j direction), g3 (cross)
};
GradientStencils cdo_gradients(std::int64_t n, std::int64_t nx, std::int64_t ny,
                               const std::function<bool(std::int64_t)>& valid);

// Calls f(p) for each point whose mask cdo_gradients(n) may look at (n's 3 x 3 block).
void gradient_neighbourhood(std::int64_t n, std::int64_t nx, std::int64_t ny,
                            const std::function<void(std::int64_t)>& f);

// Appends to `out` the folded links of one file link (row, col, w[0..k-1], k = w.size() in
// 1..4): the value term (col, w0) first, then each gradient's points in stencil order, links to
// the same source point merged into the first one. Merged coefficients that cancel exactly are
// left out, except the value term, which always stays so that a row keeps a link (a row with
// links is mapped, one without is not). The result depends on the link alone, not on how the
// file was sliced, so the bfb order of Remap is the same for any rank count.
void fold_link(Links& out, std::int64_t row, std::int64_t col, std::span<const double> w, const GradientStencils& s);

}  // namespace estuary::detail
