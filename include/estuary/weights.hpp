// Interpolation weights: links (destination point, source point, weight) and the SCRIP and
// ESMF netCDF files that hold them.
//
// Links are always distributed: each rank holds a share, and their global order is rank order,
// then local order. read_weights gives rank r the r-th of p contiguous slices of the file, so
// the global order of what it returns is the file's order. No rank ever reads the whole file.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "estuary/grid.hpp"

namespace estuary {

// One rank's share of a sparse weight matrix, indices 0-based (global grid points).
struct Links {
  std::vector<std::int64_t> row;  // destination point (SCRIP dst_address - 1, ESMF row - 1)
  std::vector<std::int64_t> col;  // source point (SCRIP src_address - 1, ESMF col - 1)
  std::vector<double> weight;
  // Destination points that take a value of their own instead of a sum of links (YAC weight
  // files' fixed_values / dst_address_fixed, YAC's `fixed` interpolation; xESMF's NaN links):
  // fixed_row[k] gets fixed_value[k] on every run. A point may not have both links and a fixed
  // value (YAC aborts there too; Remap refuses). Empty but for what read_weights returns from a
  // YAC file or an ESMF-layout file with NaN weights.
  std::vector<std::int64_t> fixed_row;
  std::vector<double> fixed_value;

  std::int64_t size() const { return static_cast<std::int64_t>(row.size()); }
  void add(std::int64_t r, std::int64_t c, double w) {
    row.push_back(r);
    col.push_back(c);
    weight.push_back(w);
  }
};

enum class WeightFormat {
  scrip,  // src_address, dst_address, remap_matrix(num_links, num_wgts): CDO, SCRIP, YAC, OASIS
  esmf,   // row, col, S(n_s): ESMF_RegridWeightGen, xESMF
};

struct WeightFileInfo {
  std::string path;
  WeightFormat format = WeightFormat::scrip;
  std::int64_t src_size = -1;  // SCRIP src_grid_size or ESMF n_a; -1 when the file omits it
  std::int64_t dst_size = -1;  // SCRIP dst_grid_size or ESMF n_b; -1 when the file omits it
  std::int64_t links = 0;      // num_links or n_s
  // SCRIP's num_wgts (1 for ESMF). With 3 (CDO gencon2) or 4 (CDO genbic) the extra columns
  // multiply source gradients; read_weights folds them in (see read_weights).
  std::int64_t num_wgts = 1;
  std::int64_t first = 0;      // position in the file of this rank's first link
  std::string map_method, normalization;  // global attributes, "" when absent
  // YAC weight files (global attribute version "yac weight file 1.0"): the grid names the file
  // is for (YAC checks them against the coupling's; so does the coupler); "" for other files.
  bool yac = false;
  std::string src_grid_name, dst_grid_name;
};

// A file of CDO's genlaf (map_method "Largest area fraction"): its matrix is the conservative
// one, but `cdo remap` applies it by value classes, not as a weighted sum (RemapRule).
bool is_largest_area_fraction(const WeightFileInfo& info);

// Collective over comm: a global text attribute of a netCDF file ("" when the file or the
// attribute is absent), read by one rank. Cheap: to look at a weight file before reading it.
std::string read_global_attribute(const std::string& path, const std::string& name, MPI_Comm comm);

struct WeightReadOptions {
  // Sizes of the grids the weights are for: a file saying otherwise, or holding an index
  // beyond them, is an error. -1: take the file's word (and check indices against it).
  std::int64_t src_size = -1;
  std::int64_t dst_size = -1;
  // Multi-weight SCRIP files only: instead of folding CDO's gradients in, return every column
  // as its own block of source indices: column c of link (d, s) becomes the link
  // (d, c * src_size + s), columns of a link consecutive, links in file order. For a model that
  // supplies the gradients itself (Component::put with gradients): the matrix then applies to
  // the stacked source [x, g1, g2 (, g3)]. One-column files are returned as they are.
  bool stack_columns = false;
};

struct WeightSlice {
  Links links;
  WeightFileInfo info;
};

// Collective over comm: rank r of p reads links [r*n/p, (r+1)*n/p) with nc_get_vara. The
// format is recognised from the variable names. Throws estuary::Error on every rank, naming the
// file and the variable or dimension, for a missing variable, sizes that disagree with each
// other or with the grids, and indices out of range (with the link's position).
//
// Multi-weight SCRIP files are applied as `cdo remap` applies them: num_wgts = 4 with a
// "Bicubic" map_method (cdo genbic) and num_wgts = 3 with a "Conservative" one (cdo gencon2)
// weigh, besides the source value, CDO's gradients of the source field over the 2-D source grid
// (src_grid_dims, masked by src_grid_imask, both read from the file). Those gradients are linear
// in the source values, so the returned links are the folded matrix W0 + W1 G1 + W2 G2 (+ W3 G3):
// each file link becomes up to 5 (conservative) or 9 (bicubic) links to its source point and
// its grid neighbours, in file order. Any other num_wgts, method, an ESMF S with several
// columns, or a file without the source grid's dims or mask is refused (naming remap_matrix or
// S) rather than applied with one column. See docs/remap.md.
//
// YAC's files (global attribute version "yac weight file 1.0"; YAC's read_weight_file) are
// SCRIP's link variables without grid sizes, plus: contains_links "FALSE" (no link variables),
// contains_fixed_dst "TRUE" with fixed_values, num_dst_per_fixed_value and dst_address_fixed
// (returned as Links::fixed_row/fixed_value, each rank a slice), and num_src_fields with
// num_links_per_src_field. Links for more than one source field (YAC's interpolation of a
// field given at cells and corners at once) are refused, naming num_src_fields: estuary's put
// has one source field. Another version string is refused, naming the attribute.
//
// xESMF's files (ESMF layout): xESMF marks a target that no source reaches, when it is to be
// NaN (a destination mask, or unmapped_to_nan), with one link of weight NaN; such a link is
// returned as the fixed value NaN of its target, as xESMF's product makes it. A NaN anywhere
// else (a target with other links, a SCRIP file) is refused.
WeightSlice read_weights(const std::string& path, MPI_Comm comm, const WeightReadOptions& options = {});

struct WeightWriteOptions {
  WeightFormat format = WeightFormat::scrip;
  std::string title = "estuary weights";
  // CDO applies a SCRIP file only with a map_method starting with Conservative, Bilinear,
  // Bicubic, Distance, Nearest or Largest (it picks how to use the grids from it), a
  // normalization of none, fracarea or destarea, and both grids. Empty: not written.
  std::string map_method;  // e.g. "Distance weighted avg of nearest neighbors"
  std::string normalization = "none";
  // Extra global attributes (name, text), e.g. the fingerprint of the grids a cached file is for.
  std::vector<std::pair<std::string, std::string>> attributes;
  // SCRIP only: grids written as src_grid_* / dst_grid_* (centres, corners, imask, area, frac;
  // in radians as SCRIP and CDO write them). Each rank passes the points it holds (together
  // every point once), or nullptr on every rank to leave them out.
  const Grid* src_grid = nullptr;
  const Grid* dst_grid = nullptr;
  // SCRIP only: several weights per link (CDO's genbic writes 4: value and three source
  // gradients; gencon2 3), links x num_wgts values, link after link; replaces links.weight.
  // Null: one weight per link, links.weight.
  int num_wgts = 1;
  const std::vector<double>* columns = nullptr;
};

// Collective over comm: writes every rank's links, in global order (rank order, then local
// order), as one file. Indices must lie in [0, src_size) and [0, dst_size).
void write_weights(const std::string& path, const Links& links, std::int64_t src_size,
                   std::int64_t dst_size, MPI_Comm comm, const WeightWriteOptions& options = {});

}  // namespace estuary
