// Helpers of the remap tests: whole-file reads with plain netCDF (independent of estuary's
// reader), the serial reference product, decompositions with halos and empty ranks, and the
// comparisons.
#pragma once

#include <mpi.h>
#include <netcdf.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/decomp_gen.hpp"
#include "estuary/remap.hpp"
#include "mpi_test_util.hpp"
#include "nc_test_util.hpp"
#include "remap_cases.hpp"

namespace rtest {

using i64 = std::int64_t;
using estuary::Decomp;

inline const std::string kData = ESTUARY_REMAP_DATA;
inline bool data_ready() { return std::filesystem::exists(kData + "/complete"); }

// A whole weight file (SCRIP as CDO writes it), 0-based, in file order.
struct Matrix {
  i64 na = 0, nb = 0;
  std::vector<i64> src, dst;
  std::vector<double> w;
};

inline std::size_t dim(int nc, const char* name) {
  int d = -1;
  std::size_t n = 0;
  if (nc_inq_dimid(nc, name, &d) == NC_NOERR) nc_inq_dimlen(nc, d, &n);
  return n;
}

inline Matrix read_matrix(const std::string& path) {
  Matrix m;
  int nc = -1, v = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return m;
  m.na = static_cast<i64>(dim(nc, "src_grid_size"));
  m.nb = static_cast<i64>(dim(nc, "dst_grid_size"));
  const std::size_t n = dim(nc, "num_links");
  std::vector<long long> a(n), b(n);
  m.w.resize(n);
  if (n > 0) {
    nc_inq_varid(nc, "src_address", &v);
    nc_get_var_longlong(nc, v, a.data());
    nc_inq_varid(nc, "dst_address", &v);
    nc_get_var_longlong(nc, v, b.data());
    nc_inq_varid(nc, "remap_matrix", &v);
    nc_get_var_double(nc, v, m.w.data());  // num_wgts is 1 in CDO's files
  }
  nc_close(nc);
  for (std::size_t k = 0; k < n; ++k) {
    m.src.push_back(a[k] - 1);
    m.dst.push_back(b[k] - 1);
  }
  return m;
}

// Variable `f` of a field file or a CDO result, flat in grid order.
inline std::vector<double> read_field(const std::string& path) {
  std::vector<double> out;
  int nc = -1, v = -1;
  if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return out;
  if (nc_inq_varid(nc, "f", &v) == NC_NOERR) {
    out.resize(nc_values(nc, v));
    nc_get_var_double(nc, v, out.data());
  }
  nc_close(nc);
  return out;
}

// The serial product in file order: each row summed from 0.0 in the order of its links.
inline std::vector<double> reference(const Matrix& m, const std::vector<double>& x, double unmapped) {
  std::vector<double> y(static_cast<std::size_t>(m.nb), 0.0);
  std::vector<char> has(y.size(), 0);
  for (std::size_t k = 0; k < m.w.size(); ++k) {
    y[static_cast<std::size_t>(m.dst[k])] += m.w[k] * x[static_cast<std::size_t>(m.src[k])];
    has[static_cast<std::size_t>(m.dst[k])] = 1;
  }
  for (std::size_t j = 0; j < y.size(); ++j)
    if (!has[j]) y[j] = unmapped;
  return y;
}

// Decompositions of n points for rank r of p, by name. "halo" repeats points (on several
// ranks and within one), "rank0" and "last reversed" leave other ranks empty.
inline std::vector<std::string> decomp_kinds() { return {"block", "cyclic", "random", "halo", "rank0", "last reversed"}; }

inline Decomp decomp(const std::string& kind, i64 n, int p, int r) {
  if (kind == "cyclic") return estuary::gen::cyclic(n, r, p);
  if (kind == "random") return estuary::gen::random(n, r, p, 11);
  if (kind == "halo") return etest::halo_block(n, p, r, 3);
  if (kind == "rank0") return r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n);
  if (kind == "last reversed") return r == p - 1 ? Decomp::stripes(n, {{n - 1, n, -1}}) : Decomp::empty(n);
  return estuary::gen::block(n, r, p);
}

// (source, destination) decomposition pairs the tests rotate through.
inline std::vector<std::pair<std::string, std::string>> decomp_pairs() {
  return {{"block", "block"}, {"cyclic", "random"}, {"random", "halo"},
          {"halo", "cyclic"}, {"rank0", "block"},   {"block", "last reversed"}};
}

struct Mode {
  estuary::RemapLocation location;
  estuary::RemapOrder order;
  std::string name() const {
    return std::string(order == estuary::RemapOrder::bfb ? "bfb" : "sum") +
           (location == estuary::RemapLocation::dst ? "/dst" : "/src");
  }
};
inline std::vector<Mode> modes() {
  using L = estuary::RemapLocation;
  using O = estuary::RemapOrder;
  return {{L::dst, O::bfb}, {L::src, O::bfb}, {L::src, O::sum}, {L::dst, O::sum}};
}

// Values of `global` at the indices of a decomposition.
inline std::vector<double> pick(const std::vector<double>& global, const Decomp& d) {
  std::vector<double> out;
  for (i64 g : d.to_indices()) out.push_back(global[static_cast<std::size_t>(g)]);
  return out;
}

// |a - b| <= tol |b| for every element at the decomposition's indices; misses appended to why.
inline bool close_to(const std::vector<double>& got, const std::vector<double>& want_global, const Decomp& d,
                     double tol, std::ostringstream& why) {
  const std::vector<i64> idx = d.to_indices();
  for (std::size_t j = 0; j < idx.size(); ++j) {
    const double want = want_global[static_cast<std::size_t>(idx[j])];
    const bool ok = tol == 0 ? etest::same_bits(got[j], want) : std::abs(got[j] - want) <= tol * std::abs(want);
    if (!ok) {
      why.precision(17);
      why << "point " << idx[j] << ": " << got[j] << ", want " << want << " (rel "
          << std::abs(got[j] - want) / std::abs(want) << ")\n";
      return false;
    }
  }
  return true;
}

}  // namespace rtest
