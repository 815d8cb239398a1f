// SCRIP and ESMF weight files: parallel slice reading with validation, and writing in turns.
#include "estuary/weights.hpp"


#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <numeric>

#include "ncfile/cdf_header.hpp"
#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "ncfile/ncfile.hpp"
#include "remap/gradients.hpp"

namespace estuary {

using i64 = std::int64_t;
using detail::NcFile;

namespace {

struct Names {
  const char* col;
  const char* row;
  const char* weight;
  const char* links;     // dimension of the link variables, as the format names it
  const char* src_size;  // dimension giving the source grid size
  const char* dst_size;
};
constexpr Names kScrip{"src_address", "dst_address", "remap_matrix", "num_links", "src_grid_size", "dst_grid_size"};
constexpr Names kEsmf{"col", "row", "S", "n_s", "n_a", "n_b"};

std::string var_at(const std::string& path, const std::string& var) { return "file " + path + ", variable " + var; }

// A grid-size dimension, trying the format's name first and then the other format's.
i64 grid_size_dim(const NcFile& f, const char* name, const char* other) {
  for (const char* n : {name, other}) {
    const int d = f.find_dim(n);
    if (d >= 0) return f.dim_len(d);
  }
  return -1;
}

constexpr i64 kChunk = i64{1} << 20;

// Rank r's share [lo, hi) of n items read in p contiguous slices (n is a file's word, up to
// 2^63: the products in 128 bits).
std::pair<i64, i64> slice_of(int r, int p, i64 n) {
  return {static_cast<i64>(static_cast<__int128>(r) * n / p), static_cast<i64>(static_cast<__int128>(r + 1) * n / p)};
}

// Reads [lo, lo+n) of a 1-D integer variable (int32 or int64 in the file) of 1-based indices,
// chunk by chunk through a bounded buffer, checking each chunk against [1, limit] (limit < 0: no
// upper bound) before reading the next, and appends them 0-based to `out`. Memory grows only
// with indices that were read and valid: a header claiming more links than the file holds
// (netCDF reads zeros past the end of a classic file) fails at the first chunk past the end.
void read_indices(const NcFile& f, int var, const std::string& name, i64 lo, i64 n, i64 limit,
                  const std::string& limit_name, std::vector<i64>& out) {
  // Indices stored as reals (some writers do) are read as reals: netCDF would truncate 11.6 to 11.
  const bool real = f.var_is_real(var);
  std::vector<long long> buf(static_cast<std::size_t>(std::min(n, kChunk)));
  std::vector<double> rbuf(real ? buf.size() : 0);
  for (i64 at = 0; at < n; at += kChunk) {
    const i64 m = std::min(kChunk, n - at);
    const std::size_t start[1] = {static_cast<std::size_t>(lo + at)}, count[1] = {static_cast<std::size_t>(m)};
    if (real) {
      f.get(var, start, count, rbuf.data());
      for (i64 k = 0; k < m; ++k) {
        const double r = rbuf[static_cast<std::size_t>(k)];
        if (!(r == std::floor(r)) || std::fabs(r) > 9e15)
          throw Error(name + " of link " + std::to_string(lo + at + k) + " (0-based position) is " + std::to_string(r) +
                          ", not a whole number",
                      var_at(f.path(), name), "indices must be whole numbers");
        buf[static_cast<std::size_t>(k)] = static_cast<long long>(r);
      }
    } else {
      f.get(var, start, count, buf.data());
    }
    for (i64 k = 0; k < m; ++k) {
      const long long v = buf[static_cast<std::size_t>(k)];
      if (v < 1 || (limit >= 0 && v > limit))
        throw Error(name + " of link " + std::to_string(lo + at + k) + " (0-based position) is " + std::to_string(v) +
                        ", outside [1, " + (limit >= 0 ? std::to_string(limit) : "inf") + "]" +
                        (limit_name.empty() ? "" : " (" + limit_name + ")"),
                    var_at(f.path(), name), "indices are 1-based and must lie within the grid");
      out.push_back(v - 1);
    }
  }
}

// Reads [lo, lo+n) of the weights, all `k` columns of each link (link-major, as in the file),
// chunk by chunk, checking that each is finite, and appends them to `out`. With `nan_ok` a NaN
// passes (xESMF's mark of a target without links: see read_weights).
void read_weight_values(const NcFile& f, int var, const std::string& name, i64 lo, i64 n, i64 k,
                        std::vector<double>& out, bool nan_ok = false) {
  const i64 rows = std::max<i64>(1, kChunk / k);
  std::vector<double> buf(static_cast<std::size_t>(std::min(n, rows) * k));
  for (i64 at = 0; at < n; at += rows) {
    const i64 m = std::min(rows, n - at);
    const std::size_t start[2] = {static_cast<std::size_t>(lo + at), 0},
                      count[2] = {static_cast<std::size_t>(m), static_cast<std::size_t>(k)};
    f.get(var, start, count, buf.data());
    for (i64 e = 0; e < m * k; ++e) {
      if (!std::isfinite(buf[static_cast<std::size_t>(e)]) && !(nan_ok && std::isnan(buf[static_cast<std::size_t>(e)])))
        throw Error(name + " of link " + std::to_string(lo + at + e / k) + " (0-based position)" +
                        (k > 1 ? ", column " + std::to_string(e % k) : std::string()) + ", is not finite",
                    var_at(f.path(), name));
      out.push_back(buf[static_cast<std::size_t>(e)]);
    }
  }
}

bool starts_with_nocase(const std::string& text, const std::string& prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t k = 0; k < prefix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(text[k])) != std::tolower(static_cast<unsigned char>(prefix[k])))
      return false;
  return true;
}

// The source grid's shape and mask, as much of it as one slice's gradient stencils need.
struct SourceStructure {
  i64 nx = 0, ny = 0;
  std::vector<i64> points;  // sorted: every point some stencil of the slice may look at
  std::vector<char> valid;  // src_grid_imask > 0 at each of `points` (CDO's test)
  bool is_valid(i64 p) const {
    const auto it = std::lower_bound(points.begin(), points.end(), p);
    if (it == points.end() || *it != p)  // gradient_neighbourhood and cdo_gradients disagree
      throw Error("internal: the mask of source point " + std::to_string(p) + " was not read", "read_weights");
    return valid[static_cast<std::size_t>(it - points.begin())] != 0;
  }
};

// Checks that a SCRIP file with k = num_wgts > 1 columns is one estuary applies as CDO does
// (bicubic with 4, second-order conservative with 3, a 2-D source grid with its mask) and reads
// the structure the gradients of this slice's source points need. Global: src_grid_dims (two
// numbers). Per slice: src_grid_imask on the 3 x 3 blocks around the slice's source points,
// read in runs, so memory and reading grow with the slice, not with the grid (a slice whose
// links touch every row, as in a shuffled file, still reads the whole mask, once).
SourceStructure read_source_structure(const NcFile& f, i64 k, const std::string& map_method, i64 src_size,
                                      const std::vector<i64>& cols) {
  const std::string where = var_at(f.path(), "remap_matrix");
  const std::string have = "remap_matrix has " + std::to_string(k) + " weights per link (num_wgts)";
  const bool bicubic = starts_with_nocase(map_method, "bicubic"), conserv = starts_with_nocase(map_method, "conservative");
  if (k != 3 && k != 4)
    throw Error(have + "; estuary applies 1, 3 (second-order conservative) or 4 (bicubic)", where,
                "refusing rather than apply the first column alone");
  if ((k == 4 && !bicubic) || (k == 3 && !conserv))
    throw Error(have + " and map_method \"" + map_method + "\"; estuary applies " +
                    (k == 4 ? "4 weights only to \"Bicubic\"" : "3 weights only to \"Conservative\"") +
                    " files (as CDO writes them: value and source gradients)",
                where, "refusing rather than apply the first column alone");
  const std::string need = "; its gradients need the source grid's shape and mask (src_grid_dims, src_grid_imask)";
  const int vd = f.find_var("src_grid_dims"), vm = f.find_var("src_grid_imask");
  if (vd < 0 || vm < 0)
    throw Error(have + need + ", and " + (vd < 0 ? "src_grid_dims" : "src_grid_imask") + " is missing", where,
                "write the file with its grids (CDO's gen* operators do)");
  const std::vector<i64> sd = f.var_shape(vd), sm = f.var_shape(vm);
  if (sd.size() != 1 || sd[0] != 2)
    throw Error(have + need + ", and src_grid_dims has " + (sd.size() == 1 ? std::to_string(sd[0]) : "non-1-D") +
                    " values, not 2 (the gradients are over a logically rectangular grid)",
                where, "give weights from a 2-D (lon-lat, Gaussian or curvilinear) source grid");
  long long dims[2] = {0, 0};
  f.get(vd, dims);
  SourceStructure s;
  s.nx = dims[0], s.ny = dims[1];
  if (s.nx < 1 || s.ny < 1 || src_size < 0 || s.nx > src_size / s.ny || s.nx * s.ny != src_size)
    throw Error(have + need + ", and src_grid_dims (" + std::to_string(s.nx) + ", " + std::to_string(s.ny) +
                    ") does not make up the " + std::to_string(src_size) + " source points",
                where, "src_grid_dims must be (nx, ny) with nx * ny = src_grid_size");
  if (sm.size() != 1 || sm[0] != src_size)
    throw Error(have + need + ", and src_grid_imask has " + (sm.size() == 1 ? std::to_string(sm[0]) : "non-1-D") +
                    " values, not " + std::to_string(src_size),
                where, "one mask value per source point");

  std::vector<i64> u = cols;
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  for (i64 c : u) detail::gradient_neighbourhood(c, s.nx, s.ny, [&](i64 p) { s.points.push_back(p); });
  std::sort(s.points.begin(), s.points.end());
  s.points.erase(std::unique(s.points.begin(), s.points.end()), s.points.end());
  // Runs of wanted points no more than kGap apart are read as one range, gaps included: few
  // netCDF calls for the neighbouring rows of a band, a bounded buffer for any file.
  constexpr i64 kGap = 4096;
  s.valid.resize(s.points.size());
  std::vector<int> buf;
  for (std::size_t a = 0; a < s.points.size();) {
    std::size_t b = a;
    while (b + 1 < s.points.size() && s.points[b + 1] - s.points[b] <= kGap && s.points[b + 1] - s.points[a] < kChunk)
      ++b;
    const i64 first = s.points[a], count = s.points[b] - first + 1;
    buf.resize(static_cast<std::size_t>(count));
    const std::size_t start[1] = {static_cast<std::size_t>(first)}, cnt[1] = {static_cast<std::size_t>(count)};
    f.get(vm, start, cnt, buf.data());
    for (std::size_t k2 = a; k2 <= b; ++k2) s.valid[k2] = buf[static_cast<std::size_t>(s.points[k2] - first)] > 0;
    a = b + 1;
  }
  return s;
}


// YAC's weight files (YAC's read_weight_file in src/core/interp_method_file.c): recognised by
// their version attribute; what they hold besides SCRIP's link variables.
constexpr const char* kYacVersion = "yac weight file 1.0";
struct YacHeader {
  bool is_yac = false;
  bool links = true, fixed = false;  // contains_links, contains_fixed_dst
  i64 links_per_field = -1;          // num_links_per_src_field of the one source field
  std::string src_grid, dst_grid;
};

bool yac_flag(const NcFile& f, const char* name) {
  const std::string v = f.text_att(name);
  if (v != "TRUE" && v != "FALSE")
    throw Error(std::string("global attribute ") + name + " is \"" + v + "\", YAC writes TRUE or FALSE",
                "file " + f.path() + ", attribute " + name, "the file is damaged: write it again");
  return v == "TRUE";
}

YacHeader read_yac_header(const NcFile& f) {
  YacHeader h;
  const std::string version = f.text_att("version");
  if (!starts_with_nocase(version, "yac weight file")) return h;
  h.is_yac = true;
  if (version != kYacVersion)
    throw Error("YAC weight file version \"" + version + "\"; estuary reads \"" + kYacVersion + "\"",
                "file " + f.path() + ", attribute version", "write the file with a YAC that writes that version");
  h.links = yac_flag(f, "contains_links");
  h.fixed = yac_flag(f, "contains_fixed_dst");
  h.src_grid = f.text_att("src_grid_name");
  h.dst_grid = f.text_att("dst_grid_name");
  if (!h.links) return h;
  const i64 nf = f.dim_len("num_src_fields");
  if (nf != 1)
    throw Error("links for " + std::to_string(nf) +
                    " source fields (YAC's interpolation of one field given at several locations, e.g. cells "
                    "and corners); estuary's put carries one source field",
                "file " + f.path() + ", dimension num_src_fields",
                "write the weights for one source location, or let estuary generate them");
  const int v = f.find_var("num_links_per_src_field");
  if (v >= 0) {
    long long n = 0;
    f.get(v, &n);
    h.links_per_field = n;
  }
  return h;
}

// This rank's slice of a YAC file's fixed targets (dst_address_fixed, grouped by value as
// num_dst_per_fixed_value says), checked against the destination grid's size (dst_size; -1:
// unchecked beyond 1), appended to links.fixed_row / fixed_value.
void read_yac_fixed(const NcFile& f, int rank, int p, i64 dst_size, Links& links) {
  const std::string& path = f.path();
  const i64 nv = f.dim_len("num_fixed_values"), nd = f.dim_len("num_fixed_dst");
  std::vector<double> values(static_cast<std::size_t>(nv));
  std::vector<long long> per_value(static_cast<std::size_t>(nv));
  if (nv > 0) {
    f.get(f.var("fixed_values"), values.data());
    f.get(f.var("num_dst_per_fixed_value"), per_value.data());
  }
  long long total = 0;
  for (const long long c : per_value) {
    if (c < 0)
      throw Error("a negative count " + std::to_string(c), var_at(path, "num_dst_per_fixed_value"),
                  "the file is damaged: write it again");
    total += c;
  }
  if (total != nd)
    throw Error("num_dst_per_fixed_value adds up to " + std::to_string(total) + " points, num_fixed_dst is " +
                    std::to_string(nd),
                var_at(path, "num_dst_per_fixed_value"), "the file is damaged: write it again");
  const auto [lo, hi] = slice_of(rank, p, nd);
  read_indices(f, f.var("dst_address_fixed"), "dst_address_fixed", lo, hi - lo, dst_size,
               dst_size >= 0 ? "destination grid size" : "", links.fixed_row);
  i64 at = 0;  // position in the file of the current value's first point
  std::size_t v = 0;
  for (i64 k = lo; k < hi; ++k) {
    while (k >= at + per_value[v]) at += per_value[v++];
    links.fixed_value.push_back(values[v]);
  }
}
}  // namespace

std::string read_global_attribute(const std::string& path, const std::string& name, MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  std::string text;
  if (r == 0) {
    try {
      text = detail::NcFile::open(path).text_att(name);
    } catch (const Error&) {
      text.clear();  // a file netCDF cannot open, or a corrupt one: no attribute
    }
  }
  long long n = static_cast<long long>(text.size());
  detail::check_mpi(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(n));
  if (n > 0) detail::check_mpi(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, comm), "MPI_Bcast");
  return text;
}

WeightSlice read_weights(const std::string& path, MPI_Comm comm, const WeightReadOptions& opt) {
  int rank = 0, p = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  WeightSlice out;
  WeightFileInfo& info = out.info;
  info.path = path;
  detail::agree(comm, [&] {
    const NcFile f = NcFile::open(path);
    const YacHeader yac = read_yac_header(f);
    info.yac = yac.is_yac;
    info.src_grid_name = yac.src_grid;
    info.dst_grid_name = yac.dst_grid;
    if (yac.fixed) read_yac_fixed(f, rank, p, opt.dst_size, out.links);
    if (yac.is_yac && !yac.links) return;  // fixed values alone: no link variables
    const bool scrip = f.find_var(kScrip.col) >= 0 || f.find_var(kScrip.row) >= 0 || f.find_var(kScrip.weight) >= 0;
    const bool esmf = f.find_var(kEsmf.col) >= 0 || f.find_var(kEsmf.row) >= 0 || f.find_var(kEsmf.weight) >= 0;
    if (!scrip && !esmf)
      throw Error("no weights: neither SCRIP (src_address, dst_address, remap_matrix) nor ESMF (row, col, S) "
                  "variables",
                  var_at(path, "src_address"), "give a weight file written by CDO, SCRIP, ESMF, xESMF or YAC");
    info.format = scrip ? WeightFormat::scrip : WeightFormat::esmf;
    const Names& nm = scrip ? kScrip : kEsmf;
    const Names& other = scrip ? kEsmf : kScrip;
    const int vc = f.var(nm.col), vr = f.var(nm.row), vw = f.var(nm.weight);

    // Shapes: both address variables 1-D of one length; weights 1-D or (links, num_wgts).
    const std::vector<i64> sc = f.var_shape(vc), sr = f.var_shape(vr), sw = f.var_shape(vw);
    if (sc.size() != 1) throw Error(std::string(nm.col) + " must be 1-D", var_at(path, nm.col));
    const i64 n = sc[0];
    if (sr.size() != 1 || sr[0] != n)
      throw Error(std::string(nm.row) + " has " + (sr.size() == 1 ? std::to_string(sr[0]) : "non-1-D") +
                      " values, " + nm.col + " has " + std::to_string(n),
                  var_at(path, nm.row), "the address variables must have one value per link");
    if (sw.empty() || sw.size() > 2 || sw[0] != n || (sw.size() == 2 && sw[1] < 1))
      throw Error(std::string(nm.weight) + " has shape (" +
                      (sw.empty() ? std::string() : std::to_string(sw[0])) +
                      (sw.size() > 1 ? ", " + std::to_string(sw[1]) : std::string()) + "), expected (" +
                      std::to_string(n) + (scrip ? ", num_wgts)" : ")"),
                  var_at(path, nm.weight), "the weights must have one value per link");
    // ESMF's S has one weight per link; SCRIP's remap_matrix may have num_wgts (checked below).
    if (!scrip && sw.size() == 2 && sw[1] != 1)
      throw Error(std::string(nm.weight) + " has " + std::to_string(sw[1]) +
                      " weights per link; ESMF files have one (estuary does not know what the others mean)",
                  var_at(path, nm.weight), "refusing rather than apply the first column alone");
    info.num_wgts = sw.size() == 2 ? sw[1] : 1;
    info.links = n;
    if (yac.is_yac && info.num_wgts != 1)
      throw Error("num_wgts is " + std::to_string(info.num_wgts) + "; YAC's files have 1", var_at(path, nm.weight),
                  "refusing rather than guess what the other columns mean");
    if (yac.is_yac && yac.links_per_field >= 0 && yac.links_per_field != n)
      throw Error("num_links_per_src_field says " + std::to_string(yac.links_per_field) + " links, num_links is " +
                      std::to_string(n),
                  var_at(path, "num_links_per_src_field"), "the file is damaged: write it again");
    info.src_size = grid_size_dim(f, nm.src_size, other.src_size);
    info.dst_size = grid_size_dim(f, nm.dst_size, other.dst_size);
    info.map_method = f.text_att("map_method");
    info.normalization = f.text_att("normalization");

    // Grid sizes: the file's word against the caller's grids.
    for (int side = 0; side < 2; ++side) {
      const i64 file = side == 0 ? info.src_size : info.dst_size, want = side == 0 ? opt.src_size : opt.dst_size;
      if (file >= 0 && want >= 0 && file != want)
        throw Error(std::string("the file's ") + (side == 0 ? "source" : "destination") + " grid has " +
                        std::to_string(file) + " points, the " + (side == 0 ? "source" : "destination") +
                        " decomposition " + std::to_string(want),
                    "file " + path + ", dimension " +
                        (f.find_dim(side == 0 ? nm.src_size : nm.dst_size) >= 0 ? (side == 0 ? nm.src_size : nm.dst_size)
                                                                                 : (side == 0 ? other.src_size : other.dst_size)),
                    "use weights generated for these two grids");
    }

    // This rank's slice, read chunk by chunk into the link arrays and checked as it comes.
    const auto [lo, hi] = slice_of(rank, p, n);
    const i64 m = hi - lo;
    info.first = lo;
    Links& L = out.links;
    const i64 src_lim = opt.src_size >= 0 ? opt.src_size : info.src_size;
    const i64 dst_lim = opt.dst_size >= 0 ? opt.dst_size : info.dst_size;
    read_indices(f, vc, nm.col, lo, m, src_lim, opt.src_size >= 0 ? "source grid size" : nm.src_size, L.col);
    read_indices(f, vr, nm.row, lo, m, dst_lim, opt.dst_size >= 0 ? "destination grid size" : nm.dst_size, L.row);
    if (info.num_wgts == 1) {
      // xESMF (add_nans_to_weights: a destination mask, or unmapped_to_nan) gives each target
      // without links one link (row, 1, NaN) so that its result is NaN: such a link is read as
      // the fixed value NaN for its row, which Remap refuses if the row has other links too.
      const bool nan_marks = !scrip;
      read_weight_values(f, vw, nm.weight, lo, m, 1, L.weight, nan_marks);
      if (nan_marks) {
        std::size_t kept = 0;
        for (std::size_t e = 0; e < L.weight.size(); ++e) {
          if (std::isnan(L.weight[e])) {
            L.fixed_row.push_back(L.row[e]);
            L.fixed_value.push_back(L.weight[e]);
            continue;
          }
          L.row[kept] = L.row[e], L.col[kept] = L.col[e], L.weight[kept] = L.weight[e];
          ++kept;
        }
        L.row.resize(kept), L.col.resize(kept), L.weight.resize(kept);
      }
      return;
    }
    // Several weights per link: checked and folded with the source gradients into one matrix.
    const SourceStructure grid = read_source_structure(f, info.num_wgts, info.map_method, info.src_size, L.col);
    std::vector<double> w;
    read_weight_values(f, vw, nm.weight, lo, m, info.num_wgts, w);
    Links file_links = std::move(L);
    L = Links{};
    const std::size_t k = static_cast<std::size_t>(info.num_wgts);
    if (opt.stack_columns) {
      const i64 ns = src_lim;  // checked above: every source index lies below it
      for (std::size_t e = 0; e < file_links.row.size(); ++e)
        for (std::size_t c = 0; c < k; ++c)
          L.add(file_links.row[e], static_cast<i64>(c) * ns + file_links.col[e], w[e * k + c]);
      return;
    }
    const auto valid = [&grid](i64 p) { return grid.is_valid(p); };
    for (std::size_t e = 0; e < file_links.row.size(); ++e)
      detail::fold_link(L, file_links.row[e], file_links.col[e], std::span<const double>(w.data() + e * k, k),
                        detail::cdo_gradients(file_links.col[e], grid.nx, grid.ny, valid));
  });
  return out;
}

namespace {

// Defines one side's grid variables (SCRIP weight file layout, as CDO writes it).
void define_grid(NcFile& f, const std::string& side, const Grid& g, int nctype_int) {
  const int dsize = f.find_dim(side + "_grid_size");
  const int drank = f.def_dim(side + "_grid_rank", static_cast<i64>(g.dims.size()));
  f.def_var(side + "_grid_dims", nctype_int, {drank});
  const int dcorn = g.ncorner > 0 ? f.def_dim(side + "_grid_corners", g.ncorner) : -1;
  for (const char* v : {"center_lat", "center_lon"})
    f.put_att("units", "radians", f.def_var(side + "_grid_" + v, detail::NcFile::kDouble, {dsize}));
  if (g.ncorner > 0)
    for (const char* v : {"corner_lat", "corner_lon"})
      f.put_att("units", "radians", f.def_var(side + "_grid_" + v, detail::NcFile::kDouble, {dsize, dcorn}));
  f.put_att("units", "unitless", f.def_var(side + "_grid_imask", detail::NcFile::kInt, {dsize}));
  f.put_att("units", "square radians", f.def_var(side + "_grid_area", detail::NcFile::kDouble, {dsize}));
  f.put_att("units", "unitless", f.def_var(side + "_grid_frac", detail::NcFile::kDouble, {dsize}));
}

// Writes the points of `g` this rank holds into the side's grid variables, converted as SCRIP
// stores them: radians, an integer mask, and the grid's fractions (1 on valid points if none).
void write_grid_points(NcFile& f, const std::string& side, const Grid& g) {
  constexpr double rad = 3.14159265358979323846 / 180.0;
  const std::size_t n = static_cast<std::size_t>(g.size()), nc = static_cast<std::size_t>(std::max(g.ncorner, 0));
  std::vector<double> lat(n), lon(n), clat(n * nc), clon(n * nc), frac(n, 1.0), area = g.area;
  std::vector<int> mask(n, 1);
  for (std::size_t k = 0; k < n; ++k) {
    lat[k] = g.lat[k] * rad;
    lon[k] = g.lon[k] * rad;
    if (!g.valid(static_cast<i64>(k))) mask[k] = 0, frac[k] = 0.0;
    if (!g.frac.empty()) frac[k] = g.frac[k];
  }
  for (std::size_t k = 0; k < n * nc; ++k) {
    clat[k] = g.corner_lat[k] * rad;
    clon[k] = g.corner_lon[k] * rad;
  }
  if (area.empty() && nc >= 3) {
    Grid copy = g;
    copy.compute_areas();
    area = std::move(copy.area);
  }
  area.resize(n, 0.0);
  std::vector<i64> idx = g.points;
  if (idx.empty()) {
    idx.resize(n);
    std::iota(idx.begin(), idx.end(), i64{0});
  }
  detail::for_each_consecutive(idx, [&](std::size_t at, i64 first, i64 count) {
    const std::size_t start[2] = {static_cast<std::size_t>(first), 0}, cnt[2] = {static_cast<std::size_t>(count), nc};
    auto put = [&](const char* name, const std::vector<double>& v, std::size_t per) {
      const std::string var = side + "_grid_" + name;
      f.put(f.var(var), start, cnt, v.data() + at * per);
    };
    put("center_lat", lat, 1);
    put("center_lon", lon, 1);
    if (nc > 0) {
      put("corner_lat", clat, nc);
      put("corner_lon", clon, nc);
    }
    put("area", area, 1);
    put("frac", frac, 1);
    const std::string var = side + "_grid_imask";
    f.put(f.var(var), start, cnt, mask.data() + at);
  });
}

}  // namespace

void write_weights(const std::string& path, const Links& links, i64 src_size, i64 dst_size, MPI_Comm comm,
                   const WeightWriteOptions& opt) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool scrip = opt.format == WeightFormat::scrip;
  const Names& nm = scrip ? kScrip : kEsmf;
  detail::agree(comm, [&] {
    if (links.col.size() != links.row.size() || links.weight.size() != links.row.size())
      throw Error("links have " + std::to_string(links.row.size()) + " rows, " + std::to_string(links.col.size()) +
                      " columns and " + std::to_string(links.weight.size()) + " weights",
                  "file " + path + ", " + detail::world_rank_label());
    for (std::size_t k = 0; k < links.row.size(); ++k)
      if (links.col[k] < 0 || links.col[k] >= src_size || links.row[k] < 0 || links.row[k] >= dst_size)
        throw Error("link " + std::to_string(k) + " (" + std::to_string(links.row[k]) + ", " +
                        std::to_string(links.col[k]) + ") is outside the grids (" + std::to_string(dst_size) +
                        " x " + std::to_string(src_size) + ")",
                    "file " + path + ", " + detail::world_rank_label());
    for (const Grid* g : {opt.src_grid, opt.dst_grid})
      if (g) g->check();
    const int k = opt.columns ? opt.num_wgts : 1;
    if (opt.columns && (!scrip || (k != 1 && k != 3 && k != 4) ||
                        opt.columns->size() != links.row.size() * static_cast<std::size_t>(k)))
      throw Error("num_wgts " + std::to_string(opt.num_wgts) + " with " + std::to_string(opt.columns->size()) +
                      " weights for " + std::to_string(links.row.size()) + " links",
                  "file " + path + ", " + detail::world_rank_label(),
                  "give num_wgts 1, 3 or 4 values per link, SCRIP format only");
    // CDO reads a Bicubic file as four weights per link whatever num_wgts says: it would apply
    // this one-column file (a folded bicubic matrix, say) wrongly and without a word.
    if (scrip && k != 4 && starts_with_nocase(opt.map_method, "bicubic"))
      throw Error("map_method \"" + opt.map_method + "\" with one weight per link: CDO applies a Bicubic SCRIP "
                      "file as four (value and three source gradients)",
                  "file " + path,
                  "name the method otherwise (\"Bilinear remapping\" makes CDO apply the matrix as it stands)");
  });
  i64 m = links.size(), first = 0, total = 0;
  detail::check_mpi(MPI_Exscan(&m, &first, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Exscan");
  if (rank == 0) first = 0;
  detail::check_mpi(MPI_Allreduce(&m, &total, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce");
  int grids = scrip && opt.src_grid && opt.dst_grid ? 1 : 0, all_grids = 0;
  detail::check_mpi(MPI_Allreduce(&grids, &all_grids, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  const bool large = std::max({src_size, dst_size, total}) > INT_MAX;
  const int itype = large ? detail::NcFile::kInt64 : detail::NcFile::kInt;

  detail::in_turns(comm, [&] {
    if (rank == 0) {
      NcFile f = NcFile::create(path, large);
      f.def_dim(nm.src_size, src_size);
      f.def_dim(nm.dst_size, dst_size);
      const int dl = f.def_dim(nm.links, total);
      if (all_grids) {
        define_grid(f, "src", *opt.src_grid, itype);
        define_grid(f, "dst", *opt.dst_grid, itype);
      }
      f.def_var(nm.col, itype, {dl});
      f.def_var(nm.row, itype, {dl});
      if (scrip) f.def_var(nm.weight, detail::NcFile::kDouble, {dl, f.def_dim("num_wgts", opt.columns ? opt.num_wgts : 1)});
      else f.def_var(nm.weight, detail::NcFile::kDouble, {dl});
      f.put_att("title", opt.title);
      if (!opt.map_method.empty()) f.put_att("map_method", opt.map_method);
      f.put_att("normalization", opt.normalization);
      for (const auto& [name, text] : opt.attributes) f.put_att(name, text);
      if (scrip) {  // CDO requires these to apply a file
        f.put_att("conventions", "SCRIP");
        f.put_att("source_grid", all_grids ? opt.src_grid->name : "unknown");
        f.put_att("dest_grid", all_grids ? opt.dst_grid->name : "unknown");
      }
      f.enddef();
      if (all_grids)
        for (const Grid* g : {opt.src_grid, opt.dst_grid}) {
          std::vector<long long> dims(g->dims.begin(), g->dims.end());
          const std::string var = g == opt.src_grid ? "src_grid_dims" : "dst_grid_dims";
          f.put(f.var(var), dims.data());
        }
      f.close();
    }
    NcFile f = NcFile::open(path, true);
    if (m > 0) {
      const std::size_t k = opt.columns ? static_cast<std::size_t>(opt.num_wgts) : 1;
      const std::size_t start[2] = {static_cast<std::size_t>(first), 0}, count[2] = {static_cast<std::size_t>(m), k};
      std::vector<long long> one_based(static_cast<std::size_t>(m));
      for (auto [var, src] : {std::pair{nm.col, &links.col}, std::pair{nm.row, &links.row}}) {
        for (std::size_t k = 0; k < one_based.size(); ++k) one_based[k] = (*src)[k] + 1;
        f.put(f.var(var), start, count, one_based.data());
      }
      f.put(f.var(nm.weight), start, count, opt.columns ? opt.columns->data() : links.weight.data());
    }
    if (all_grids) {
      write_grid_points(f, "src", *opt.src_grid);
      write_grid_points(f, "dst", *opt.dst_grid);
    }
    f.close();
  });
}

bool is_largest_area_fraction(const WeightFileInfo& info) {
  return starts_with_nocase(info.map_method, "largest area fraction");
}

}  // namespace estuary
