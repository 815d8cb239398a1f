// CDO's source gradients as stencils (see gradients.hpp), and the folding of multi-weight links.
#include "remap/gradients.hpp"

namespace estuary::detail {

using i64 = std::int64_t;

void gradient_neighbourhood(i64 n, i64 nx, i64 ny, const std::function<void(i64)>& f) {
  const i64 j = n / nx, i = n % nx;
  for (i64 dj = -1; dj <= 1; ++dj) {
    const i64 jj = j + dj;
    if (jj < 0 || jj >= ny) continue;
    // Distinct columns only: with nx <= 2 the wrapped neighbours coincide.
    const i64 cols[3] = {i, (i + 1) % nx, (i + nx - 1) % nx};
    for (int c = 0; c < 3; ++c) {
      bool seen = false;
      for (int b = 0; b < c; ++b) seen = seen || cols[b] == cols[c];
      if (!seen) f(jj * nx + cols[c]);
    }
  }
}

GradientStencils cdo_gradients(i64 n, i64 nx, i64 ny, const std::function<bool(i64)>& valid) {
  GradientStencils s;
  if (!valid(n)) return s;
  // The statements below follow CDO's remap_gradients one for one (0-based here), including
  // how the step factors carry over from one part to the next: the stencils must reproduce its
  // arithmetic, masked corners and all, not merely approximate a derivative.
  const i64 j = n / nx, i = n % nx;
  double delew = 0.5, delns = 0.5;
  const i64 ip1 = i + 1 < nx ? i + 1 : 0;   // i is periodic
  const i64 im1 = i > 0 ? i - 1 : nx - 1;
  i64 jp1 = j + 1, jm1 = j - 1;             // j is not: one-sided at the first and last row
  if (jp1 >= ny) jp1 = j, delns = 1.0;
  if (jm1 < 0) jm1 = j, delns = 1.0;
  auto at = [nx](i64 jj, i64 ii) { return jj * nx + ii; };
  i64 in = at(jp1, i), is = at(jm1, i), ie = at(j, ip1), iw = at(j, im1);
  i64 ine = at(jp1, ip1), inw = at(jp1, im1), ise = at(jm1, ip1), isw = at(jm1, im1);

  // g1: across i; a masked neighbour is replaced by the point itself (one-sided difference).
  if (!valid(ie)) ie = n, delew = 1.0;
  if (!valid(iw)) iw = n, delew = 1.0;
  s.g[0] = {2, {ie, iw}, {delew, -delew}};

  // g2: across j.
  if (!valid(in)) in = n, delns = 1.0;
  if (!valid(is)) is = n, delns = 1.0;
  s.g[1] = {2, {in, is}, {delns, -delns}};

  // g3: the i-difference of the north row minus that of the south row, with masked corners
  // replaced by their neighbours (the substitutes from g1 and g2 above).
  delew = 0.5;
  delns = (jp1 == j || jm1 == j) ? 1.0 : 0.5;
  if (!valid(ine)) {
    if (in != n) ine = in, delew = 1.0;
    else if (ie != n) {
      ine = ie, inw = iw;
      if (inw == n) delew = 1.0;
      delns = 1.0;
    } else ine = n, inw = iw, delew = 1.0, delns = 1.0;
  }
  if (!valid(inw)) {
    if (in != n) inw = in, delew = 1.0;
    else if (iw != n) {
      inw = iw, ine = ie;
      if (ie == n) delew = 1.0;
      delns = 1.0;
    } else inw = n, ine = ie, delew = 1.0, delns = 1.0;
  }
  const double north = delew;  // factor of (x[ine] - x[inw])
  if (!valid(ise)) {
    if (is != n) ise = is, delew = 1.0;
    else if (ie != n) {
      ise = ie, isw = iw;
      if (isw == n) delew = 1.0;
      delns = 1.0;
    } else ise = n, isw = iw, delew = 1.0, delns = 1.0;
  }
  if (!valid(isw)) {
    if (is != n) isw = is, delew = 1.0;
    else if (iw != n) {
      isw = iw, ise = ie;
      if (ie == n) delew = 1.0;
      delns = 1.0;
    } else isw = n, ise = ie, delew = 1.0, delns = 1.0;
  }
  const double south = delew;  // factor of (x[ise] - x[isw]); delns is the final one for both
  // Products of powers of two: exact, so only the summation order differs from CDO's.
  s.g[2] = {4, {ine, inw, ise, isw}, {delns * north, -delns * north, -delns * south, delns * south}};
  return s;
}

void fold_link(Links& out, i64 row, i64 col, std::span<const double> w, const GradientStencils& s) {
  // At most 1 + 2 + 2 + 4 terms; merged in place, in order of first appearance.
  i64 pt[9];
  double cf[9];
  int m = 0;
  auto add = [&](i64 p, double c) {
    for (int k = 0; k < m; ++k)
      if (pt[k] == p) {
        cf[k] += c;
        return;
      }
    pt[m] = p, cf[m] = c, ++m;
  };
  add(col, w[0]);
  for (std::size_t g = 1; g < w.size(); ++g)
    for (int t = 0; t < s.g[g - 1].count; ++t) add(s.g[g - 1].point[t], w[g] * s.g[g - 1].coeff[t]);
  for (int k = 0; k < m; ++k)
    if (k == 0 || cf[k] != 0.0) out.add(row, pt[k], cf[k]);
}

}  // namespace estuary::detail
