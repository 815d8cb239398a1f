// The grid pairs and CDO weight methods the remap tests use, shared by the data fixture
// (remap_cdo_data, which runs CDO once before the MPI tests) and test_remap.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "estuary/grid.hpp"

namespace rtest {

// The grids, small versions of each kind (a masked tripolar grid among them).
inline std::vector<std::pair<std::string, estuary::GridGen>> grids() {
  using estuary::GridGen;
  return {{"ll", GridGen::lonlat(36, 18)},       {"tri", GridGen::tripolar(36, 24)},
          {"tril", GridGen::tripolar(30, 20).with_land()}, {"rg", GridGen::reduced_gaussian(8)},
          {"gg", GridGen::gaussian(32, 16)},     {"cs", GridGen::cubed_sphere(5)},
          // Lon-lat sources of the multi-weight cases (one with land) and a finer target.
          {"llm", GridGen::lonlat(36, 18).with_land()}, {"ll2", GridGen::lonlat(50, 25)}};
}

inline estuary::GridGen grid(const std::string& name) {
  for (const auto& [n, g] : grids())
    if (n == name) return g;
  return estuary::GridGen::lonlat(1, 1);
}

struct Case {
  std::string src, dst, method;  // grid names; CDO operator gencon, gendis or genbil
  std::string name() const { return src + "_" + dst + "_" + method; }
};

// genbil needs a logically rectangular source (lon-lat, Gaussian or curvilinear).
inline std::vector<Case> cases() {
  return {{"ll", "tri", "gencon"}, {"ll", "tri", "gendis"}, {"ll", "tri", "genbil"},
          {"tril", "ll", "gencon"}, {"tril", "ll", "gendis"}, {"tril", "ll", "genbil"},
          {"rg", "cs", "gencon"},  {"rg", "cs", "gendis"},  {"gg", "rg", "genbil"},
          {"gg", "rg", "gencon"},  {"cs", "gg", "gendis"},  {"cs", "gg", "gencon"}};
}

// Multi-weight cases: CDO's genbic (num_wgts 4: value, i, j and cross gradients) and gencon2
// (num_wgts 3: value, i and j gradients) from lon-lat sources, with and without a land mask,
// to a lon-lat grid of another resolution and to a Gaussian grid. Kept apart from cases(): their
// files have several columns, which the single-weight helpers (read_matrix) do not read.
inline std::vector<Case> multi_cases() {
  return {{"ll", "ll2", "genbic"},  {"ll", "gg", "genbic"},   {"llm", "ll2", "genbic"},
          {"llm", "gg", "genbic"},  {"ll", "gg", "gencon2"},  {"llm", "ll2", "gencon2"}};
}

// CDO's genlaf (largest area fraction): the conservative matrix, applied by `cdo remap` as a
// choice among value classes; the fixture remaps a field of a few classes (class_field).
inline std::vector<Case> laf_cases() { return {{"ll", "tri", "genlaf"}, {"tril", "ll", "genlaf"}, {"cs", "gg", "genlaf"}}; }

// Field k at a point: smooth, between 0.5 and 3.5 (so relative differences mean something).
inline double field(int k, double lon_deg, double lat_deg) {
  const double lo = lon_deg * M_PI / 180, la = lat_deg * M_PI / 180;
  return 2.0 + std::cos(la) * std::cos(la) * std::cos((k + 2) * lo) + 0.5 * std::sin(3 * la + k);
}

// A field of categories (land-use or soil classes): field 0 rounded down to a multiple of 0.5,
// five or six classes over a grid.
inline double class_field(double lon_deg, double lat_deg) { return std::floor(2.0 * field(0, lon_deg, lat_deg)) / 2.0; }

// File names inside the data directory.
inline std::string grid_file(const std::string& dir, const std::string& g) { return dir + "/grid_" + g + ".nc"; }
inline std::string field_file(const std::string& dir, const std::string& g) { return dir + "/field_" + g + ".nc"; }
inline std::string class_file(const std::string& dir, const std::string& g) { return dir + "/classes_" + g + ".nc"; }
inline std::string weight_file(const std::string& dir, const Case& c) { return dir + "/w_" + c.name() + ".nc"; }
inline std::string cdo_out_file(const std::string& dir, const Case& c) { return dir + "/cdo_" + c.name() + ".nc"; }
// The weights of a case as estuary wrote them (with grids), and CDO's result with those.
inline std::string rewritten_file(const std::string& dir, const Case& c) { return dir + "/est_" + c.name() + ".nc"; }
inline std::string cdo_rewritten_out(const std::string& dir, const Case& c) { return dir + "/cdo_est_" + c.name() + ".nc"; }

constexpr double kMissing = -9e33;  // CDO's missing value for unmapped destination points

}  // namespace rtest
