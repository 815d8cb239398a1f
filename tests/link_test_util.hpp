// Generated weight links compared with CDO's: gathered and sorted links, and a comparison that
// names the first difference. Shared by the weight-generation tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "estuary/weightgen.hpp"
#include "remap_test_util.hpp"

namespace ltest {

using estuary::Links;
using rtest::i64;

struct Link {
  i64 dst, src;
  double w;
  bool operator<(const Link& o) const { return std::tie(dst, src) < std::tie(o.dst, o.src); }
};

// Every rank's links, on every rank, sorted by (dst, src).
inline std::vector<Link> gather_sorted(const Links& l, MPI_Comm comm = MPI_COMM_WORLD) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  const int n = static_cast<int>(l.size());
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (int r = 1; r < p; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  const int total = displs[p - 1] + counts[p - 1];
  std::vector<i64> row(static_cast<std::size_t>(total)), col(row.size());
  std::vector<double> w(row.size());
  MPI_Allgatherv(l.row.data(), n, MPI_INT64_T, row.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  MPI_Allgatherv(l.col.data(), n, MPI_INT64_T, col.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  MPI_Allgatherv(l.weight.data(), n, MPI_DOUBLE, w.data(), counts.data(), displs.data(), MPI_DOUBLE, comm);
  std::vector<Link> out;
  for (std::size_t k = 0; k < row.size(); ++k) out.push_back({row[k], col[k], w[k]});
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<Link> sorted(const rtest::Matrix& m) {
  std::vector<Link> out;
  for (std::size_t k = 0; k < m.w.size(); ++k) out.push_back({m.dst[k], m.src[k], m.w[k]});
  std::sort(out.begin(), out.end());
  return out;
}

// Same pairs, weights within tol (0: same bits); the first difference appended to why, and
// the largest weight difference over the common pairs in max_diff.
inline bool same_links(const std::vector<Link>& got, const std::vector<Link>& want, double tol, std::ostringstream& why,
                double* max_diff = nullptr) {
  if (got.size() != want.size()) why << got.size() << " links, want " << want.size() << "; ";
  bool ok = got.size() == want.size();
  double md = 0;
  for (std::size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    const Link &a = got[k], &b = want[k];
    const bool same_pair = a.dst == b.dst && a.src == b.src;
    if (same_pair) md = std::max(md, std::abs(a.w - b.w));
    const bool good = same_pair && (tol == 0 ? etest::same_bits(a.w, b.w) : std::abs(a.w - b.w) <= tol);
    if (!good && ok) {
      why.precision(17);
      why << "link " << k << ": (dst " << a.dst << ", src " << a.src << ", w " << a.w << "), want (dst " << b.dst
          << ", src " << b.src << ", w " << b.w << ")";
      ok = false;
    }
  }
  if (max_diff) *max_diff = md;
  return ok;
}

// The fixture cases made by one CDO method ("gendis", "genbil", ...).
inline std::vector<rtest::Case> cases_of(const std::string& method) {
  std::vector<rtest::Case> out;
  for (const rtest::Case& c : rtest::cases())
    if (c.method == method) out.push_back(c);
  return out;
}

// Decompositions without repeats (a point held twice would get its links twice).
inline std::vector<std::string> kinds() { return {"block", "cyclic", "random", "rank0", "last reversed"}; }


}  // namespace ltest
