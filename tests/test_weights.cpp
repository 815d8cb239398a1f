// Weight files: slices read in parallel, SCRIP and ESMF (and xESMF's dimension-less variant)
// written and read back, CDO applying what estuary wrote, YAC's files (fixed values, several
// source fields) applied as YAC does or refused, and every malformed file raising an
// estuary::Error that names the file and the variable on every rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <netcdf.h>

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "estuary/error.hpp"
#include "estuary/remap.hpp"
#include "estuary/weights.hpp"
#include "remap_test_util.hpp"

using rtest::i64;

namespace {

// A directory made by rank 0, shared with every rank, removed at the end (collectively).
struct SharedDir {
  std::string path;
  SharedDir() {
    char p[64] = "/tmp/estuary_weights_XXXXXX";
    if (etest::world_rank() == 0 && !mkdtemp(p)) p[0] = '\0';
    MPI_Bcast(p, sizeof p, MPI_CHAR, 0, MPI_COMM_WORLD);
    path = p;
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    std::error_code ec;
    if (etest::world_rank() == 0 && !path.empty()) std::filesystem::remove_all(path, ec);
  }
};

// A netCDF file of named dimensions and variables (values as doubles, stored as `type`).
struct NcVar {
  std::string name;
  std::vector<std::string> dims;
  std::vector<double> values;
  nc_type type = NC_INT;
};

void write_nc(const std::string& path, const std::map<std::string, std::size_t>& dims, const std::vector<NcVar>& vars,
              int format = NC_64BIT_OFFSET, const std::map<std::string, std::string>& attributes = {}) {
  int nc = -1;
  ASSERT_EQ(nc_create(path.c_str(), NC_CLOBBER | format, &nc), NC_NOERR) << path;
  for (const auto& [name, text] : attributes) nc_put_att_text(nc, NC_GLOBAL, name.c_str(), text.size(), text.data());
  std::map<std::string, int> ids;
  for (const auto& [name, len] : dims) nc_def_dim(nc, name.c_str(), len, &ids[name]);
  std::vector<int> vids;
  for (const NcVar& v : vars) {
    std::vector<int> d;
    for (const std::string& n : v.dims) d.push_back(ids[n]);
    int id = -1;
    nc_def_var(nc, v.name.c_str(), v.type, static_cast<int>(d.size()), d.data(), &id);
    vids.push_back(id);
  }
  nc_enddef(nc);
  for (std::size_t k = 0; k < vars.size(); ++k) {
    if (vars[k].values.empty()) continue;
    if (vars[k].type == NC_CHAR) {  // text: one character a value
      const std::string text(vars[k].values.begin(), vars[k].values.end());
      nc_put_var_text(nc, vids[k], text.data());
    } else {
      nc_put_var_double(nc, vids[k], vars[k].values.data());
    }
  }
  nc_close(nc);
}

// Runs `f` expecting an estuary::Error on this rank whose text holds every one of `words`.
bool raises(const std::function<void()>& f, const std::vector<std::string>& words, std::string& text) {
  try {
    f();
  } catch (const estuary::Error& e) {
    text = e.what();
    for (const std::string& w : words)
      if (text.find(w) == std::string::npos) return false;
    return true;
  } catch (const std::exception& e) {
    text = std::string("not an estuary::Error: ") + e.what();
    return false;
  }
  text = "no error";
  return false;
}

std::vector<double> seq(std::size_t n, double first, double step = 1) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = first + step * static_cast<double>(k);
  return v;
}

}  // namespace

TEST(Weights, ParallelSlicesAreTheFileInOrder) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  for (const rtest::Case& c : rtest::cases()) {
    const std::string path = rtest::weight_file(rtest::kData, c);
    const rtest::Matrix m = rtest::read_matrix(path);
    const estuary::WeightSlice s = estuary::read_weights(path, MPI_COMM_WORLD);
    const i64 n = static_cast<i64>(m.w.size()), lo = r * n / p, hi = (r + 1) * n / p;
    EXPECT_EQ(s.info.format, estuary::WeightFormat::scrip);
    EXPECT_EQ(s.info.links, n);
    EXPECT_EQ(s.info.src_size, m.na);
    EXPECT_EQ(s.info.dst_size, m.nb);
    EXPECT_EQ(s.info.first, lo);
    EXPECT_FALSE(s.info.map_method.empty());
    ASSERT_EQ(s.links.size(), hi - lo) << c.name();
    bool same = true;
    for (i64 k = lo; k < hi; ++k) {
      const std::size_t g = static_cast<std::size_t>(k), l = static_cast<std::size_t>(k - lo);
      same = same && s.links.row[l] == m.dst[g] && s.links.col[l] == m.src[g] && etest::same_bits(s.links.weight[l], m.w[g]);
    }
    EXPECT_TRUE(same) << c.name();
  }
}

TEST(Weights, EsmfAndScripWrittenInParallelReadBack) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  const int p = etest::world_size(), r = etest::world_rank();
  const SharedDir tmp;
  const std::string& dir = tmp.path;
  const rtest::Case c{"tril", "ll", "gencon"};
  const std::string cdo_file = rtest::weight_file(rtest::kData, c);
  const rtest::Matrix m = rtest::read_matrix(cdo_file);
  const estuary::WeightSlice s = estuary::read_weights(cdo_file, MPI_COMM_WORLD);
  // Written by every rank (its slice), then read back whole: the same links in the same order.
  for (estuary::WeightFormat fmt : {estuary::WeightFormat::esmf, estuary::WeightFormat::scrip}) {
    estuary::WeightWriteOptions wo;
    wo.format = fmt;
    const std::string path = dir + (fmt == estuary::WeightFormat::esmf ? "/esmf.nc" : "/scrip.nc");
    estuary::write_weights(path, s.links, m.na, m.nb, MPI_COMM_WORLD, wo);
    const estuary::WeightSlice back = estuary::read_weights(path, MPI_COMM_SELF);
    EXPECT_EQ(back.info.format, fmt);
    EXPECT_EQ(back.info.src_size, m.na);
    EXPECT_EQ(back.info.dst_size, m.nb);
    EXPECT_EQ(back.links.col, m.src);
    EXPECT_EQ(back.links.row, m.dst);
    EXPECT_EQ(back.links.weight, m.w);
  }
  // xESMF saves row, col and S alone, without n_a and n_b, here as netCDF-4 int64.
  if (r == 0) {
    std::vector<double> row, col;
    for (std::size_t k = 0; k < m.w.size(); ++k) {
      row.push_back(static_cast<double>(m.dst[k] + 1));
      col.push_back(static_cast<double>(m.src[k] + 1));
    }
    write_nc(dir + "/xesmf.nc", {{"n_s", m.w.size()}},
             {{"row", {"n_s"}, row, NC_INT64}, {"col", {"n_s"}, col, NC_INT64}, {"S", {"n_s"}, m.w, NC_DOUBLE}},
             NC_NETCDF4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // The three files give bit-identical remaps.
  const estuary::Decomp src = rtest::decomp("cyclic", m.na, p, r), dst = rtest::decomp("halo", m.nb, p, r);
  const std::vector<double> x = rtest::pick(rtest::read_field(rtest::field_file(rtest::kData, c.src)), src);
  std::vector<std::vector<double>> ys;
  for (const std::string& f : {cdo_file, dir + "/esmf.nc", dir + "/scrip.nc", dir + "/xesmf.nc"}) {
    estuary::Remap rm(f, src, dst, MPI_COMM_WORLD);
    ys.emplace_back(static_cast<std::size_t>(dst.size()));
    rm.run(x, ys.back());
  }
  bool ok = true;
  for (std::size_t k = 1; k < ys.size(); ++k)
    for (std::size_t j = 0; j < ys[0].size(); ++j) ok = ok && etest::same_bits(ys[k][j], ys[0][j]);
  EXPECT_TRUE(etest::all_ok(ok));
}

TEST(Weights, CdoAppliesWhatEstuaryWrote) {
  ASSERT_TRUE(rtest::data_ready()) << "no CDO results in " << rtest::kData;
  // The fixture rewrote every CDO file with write_weights (grids included) and had CDO apply
  // it: CDO's result equals CDO's result with its own file.
  for (const rtest::Case& c : rtest::cases()) {
    const std::vector<double> a = rtest::read_field(rtest::cdo_out_file(rtest::kData, c));
    const std::vector<double> b = rtest::read_field(rtest::cdo_rewritten_out(rtest::kData, c));
    ASSERT_EQ(a.size(), b.size()) << c.name();
    ASSERT_FALSE(a.empty()) << c.name();
    bool same = true;
    for (std::size_t j = 0; j < a.size(); ++j) same = same && etest::same_bits(a[j], b[j]);
    EXPECT_TRUE(same) << c.name();
  }
}

TEST(Weights, MalformedFilesRaiseErrorsNamingFileAndVariable) {
  const int p = etest::world_size(), r = etest::world_rank();
  const SharedDir tmp;
  const std::string& dir = tmp.path;
  const std::size_t n = 23;  // links: the last one sits in the last rank's slice
  const i64 na = 10, nb = 7;
  std::vector<double> src = seq(n, 1, 0), dst = seq(n, 1, 0), w = seq(n, 0.5, 0.01);
  for (std::size_t k = 0; k < n; ++k) {
    src[k] = 1 + static_cast<double>(k % na);
    dst[k] = 1 + static_cast<double>(k % nb);
  }
  const std::map<std::string, std::size_t> sd{{"src_grid_size", na}, {"dst_grid_size", nb}, {"num_links", n}, {"num_wgts", 1}};
  const std::map<std::string, std::size_t> ed{{"n_a", na}, {"n_b", nb}, {"n_s", n}};
  const NcVar sa{"src_address", {"num_links"}, src}, da{"dst_address", {"num_links"}, dst};
  const NcVar rm{"remap_matrix", {"num_links", "num_wgts"}, w, NC_DOUBLE};
  const NcVar er{"row", {"n_s"}, dst}, ec{"col", {"n_s"}, src}, es{"S", {"n_s"}, w, NC_DOUBLE};
  auto with = [](std::vector<double> v, std::size_t at, double x) { v[at] = x; return v; };
  // A SCRIP file with k weights per link, the source grid given as nx x (na / nx) (when
  // `dims`) and its mask (when `mask`), and map_method `method` (none when empty).
  auto multi = [&](const std::string& f, std::size_t k, const std::string& method, bool dims, bool mask, double nx) {
    auto d = sd;
    d["num_wgts"] = k;
    d["src_grid_rank"] = 2;
    std::vector<NcVar> v = {sa, da, {"remap_matrix", {"num_links", "num_wgts"}, seq(k * n, 0.5, 0.01), NC_DOUBLE}};
    if (dims) v.push_back({"src_grid_dims", {"src_grid_rank"}, {nx, std::floor(static_cast<double>(na) / nx)}});
    if (mask) v.push_back({"src_grid_imask", {"src_grid_size"}, seq(na, 1, 0)});
    std::map<std::string, std::string> atts;
    if (!method.empty()) atts["map_method"] = method;
    write_nc(f, d, v, NC_64BIT_OFFSET, atts);
  };
  struct Bad {
    std::string file, variable;  // what the error must name
    std::function<void(const std::string&)> make;
    i64 src_size = na, dst_size = nb;
  };
  std::vector<Bad> bad = {
      {"no_src.nc", "src_address", [&](const std::string& f) { write_nc(f, sd, {da, rm}); }},
      {"no_dst.nc", "dst_address", [&](const std::string& f) { write_nc(f, sd, {sa, rm}); }},
      {"no_matrix.nc", "remap_matrix", [&](const std::string& f) { write_nc(f, sd, {sa, da}); }},
      {"esmf_no_S.nc", "variable S", [&](const std::string& f) { write_nc(f, ed, {er, ec}); }},
      {"esmf_no_col.nc", "variable col", [&](const std::string& f) { write_nc(f, ed, {er, es}); }},
      {"nothing.nc", "src_address", [&](const std::string& f) { write_nc(f, sd, {}); }},
      {"short_dst.nc", "dst_address", [&](const std::string& f) {
         auto d = sd;
         d["other"] = n - 1;
         write_nc(f, d, {sa, {"dst_address", {"other"}, seq(n - 1, 1, 0)}, rm});
       }},
      {"short_matrix.nc", "remap_matrix", [&](const std::string& f) {
         auto d = sd;
         d["other"] = n + 2;
         write_nc(f, d, {sa, da, {"remap_matrix", {"other", "num_wgts"}, seq(n + 2, 1), NC_DOUBLE}});
       }},
      {"wrong_src_size.nc", "src_grid_size", [&](const std::string& f) { write_nc(f, sd, {sa, da, rm}); }, na + 5, nb},
      {"wrong_n_b.nc", "n_b", [&](const std::string& f) { write_nc(f, ed, {er, ec, es}); }, na, nb - 1},
      {"src_too_big.nc", "src_address", [&](const std::string& f) {
         write_nc(f, sd, {{"src_address", {"num_links"}, with(src, n - 1, na + 1)}, da, rm});
       }},
      {"dst_zero.nc", "dst_address", [&](const std::string& f) {
         write_nc(f, sd, {sa, {"dst_address", {"num_links"}, with(dst, 0, 0)}, rm});
       }},
      {"col_not_whole.nc", "variable col", [&](const std::string& f) {  // stored as reals: 2.5 is no index
         write_nc(f, ed, {er, {"col", {"n_s"}, with(src, 3, 2.5), NC_DOUBLE}, es});
       }},
      {"row_negative.nc", "variable row", [&](const std::string& f) {
         write_nc(f, ed, {{"row", {"n_s"}, with(dst, n / 2, -3)}, ec, es});
       }},
      {"nan_weight.nc", "remap_matrix", [&](const std::string& f) {
         write_nc(f, sd, {sa, da, {"remap_matrix", {"num_links", "num_wgts"}, with(w, n - 2, std::nan("")), NC_DOUBLE}});
       }},
      // Several weights per link that estuary cannot apply as CDO does: refused, never applied
      // with the first column alone.
      {"num_wgts_2.nc", "remap_matrix", [&](const std::string& f) { multi(f, 2, "Bicubic remapping", true, true, 5); }},
      {"num_wgts_5.nc", "remap_matrix", [&](const std::string& f) { multi(f, 5, "Bicubic remapping", true, true, 5); }},
      {"four_bilinear.nc", "remap_matrix", [&](const std::string& f) { multi(f, 4, "Bilinear remapping", true, true, 5); }},
      {"three_no_method.nc", "remap_matrix", [&](const std::string& f) { multi(f, 3, "", true, true, 5); }},
      {"bicubic_no_dims.nc", "remap_matrix", [&](const std::string& f) { multi(f, 4, "Bicubic remapping", false, true, 5); }},
      {"bicubic_no_mask.nc", "remap_matrix", [&](const std::string& f) { multi(f, 4, "Bicubic remapping", true, false, 5); }},
      {"conserv2_bad_dims.nc", "remap_matrix", [&](const std::string& f) {
         multi(f, 3, "Conservative remapping", true, true, 3);  // 3 x 3 is not 10 points
       }},
      {"esmf_S_columns.nc", "variable S", [&](const std::string& f) {
         auto d = ed;
         d["three"] = 3;
         write_nc(f, d, {er, ec, {"S", {"n_s", "three"}, seq(3 * n, 0.5, 0.01), NC_DOUBLE}});
       }},
      {"missing_file.nc", "missing_file.nc", [](const std::string&) {}},
      {"not_netcdf.nc", "not_netcdf.nc", [](const std::string& f) { std::ofstream(f) << "no netCDF here\n"; }},
  };
  if (r == 0)
    for (const Bad& b : bad) b.make(dir + "/" + b.file);
  MPI_Barrier(MPI_COMM_WORLD);
  for (const Bad& b : bad) {
    const std::string path = dir + "/" + b.file;
    // Both ways in: the reader, and a Remap built from the file.
    std::string text;
    estuary::WeightReadOptions ro;
    ro.src_size = b.src_size;
    ro.dst_size = b.dst_size;
    bool ok = raises([&] { estuary::read_weights(path, MPI_COMM_WORLD, ro); }, {path, b.variable}, text);
    EXPECT_TRUE(ok) << b.file << " (read_weights): " << text;
    ok = raises([&] {
      estuary::Remap rm(path, estuary::gen::block(b.src_size, r, p), estuary::gen::block(b.dst_size, r, p), MPI_COMM_WORLD);
    }, {b.variable}, text) && ok;
    EXPECT_TRUE(ok) << b.file << " (Remap): " << text;
    EXPECT_TRUE(etest::all_ok(ok)) << b.file;
  }
  // A one-column file called Bicubic, which CDO would read as four columns, is refused.
  {
    estuary::WeightWriteOptions wo;
    wo.map_method = "Bicubic remapping";
    std::string text;
    const bool ok = raises([&] { estuary::write_weights(dir + "/bicubic.nc", {}, na, nb, MPI_COMM_WORLD, wo); },
                           {"bicubic.nc", "Bicubic"}, text);
    EXPECT_TRUE(ok) << text;
    EXPECT_TRUE(etest::all_ok(ok));
  }
  // Out-of-range links are refused by the writer too.
  estuary::Links links;
  if (r == p - 1) links.add(nb, 0, 1.0);
  std::string text;
  const bool ok = raises([&] { estuary::write_weights(dir + "/out.nc", links, na, nb, MPI_COMM_WORLD); }, {"out.nc"}, text);
  EXPECT_TRUE(ok) << text;
  EXPECT_TRUE(etest::all_ok(ok));
}

// YAC's weight files, written in the layout of YAC's writer (the variables, dimensions and
// attributes YAC's read_weight_file in src/core/interp_method_file.c reads): links as SCRIP's
// without grid sizes, and fixed values — targets that take a value of their own, grouped by
// value (num_dst_per_fixed_value, dst_address_fixed). Applied on every decomposition pair and
// mode, against the serial sum in file order (bit for bit with bfb) with the fixed targets at
// their values and the rest unmapped; files YAC would refuse, or that carry several source
// fields, refused naming the file and the variable, dimension or attribute.
namespace {

struct YacFile {
  std::vector<double> src, dst, w;                    // 1-based addresses, in file order
  std::vector<std::pair<double, std::vector<double>>> fixed;  // value, its 1-based targets
  std::string version = "yac weight file 1.0";
  std::size_t src_fields = 1;
  double links_per_field = -1;  // num_links_per_src_field; -1: the number of links
  std::string contains_links;   // "": from the links
};

void write_yac(const std::string& path, const YacFile& y) {
  const std::size_t n = y.w.size();
  std::size_t nfixed = 0;
  for (const auto& [v, t] : y.fixed) nfixed += t.size();
  std::map<std::string, std::size_t> dims{{"num_src_fields", y.src_fields}, {"max_loc_str_len", 10}};
  std::vector<NcVar> vars;
  if (n > 0) {
    dims["num_links"] = n;
    dims["num_wgts"] = 1;
    vars.push_back({"src_address", {"num_links"}, y.src});
    vars.push_back({"dst_address", {"num_links"}, y.dst});
    vars.push_back({"remap_matrix", {"num_links", "num_wgts"}, y.w, NC_DOUBLE});
    vars.push_back({"num_links_per_src_field", {"num_src_fields"},
                    std::vector<double>(y.src_fields, y.links_per_field >= 0 ? y.links_per_field
                                                                              : static_cast<double>(n) / y.src_fields)});
  }
  std::string locations;
  for (std::size_t f = 0; f < y.src_fields; ++f) locations += std::string("CELL") + std::string(6, '\0');
  vars.push_back({"src_locations", {"num_src_fields", "max_loc_str_len"}, {locations.begin(), locations.end()}, NC_CHAR});
  const std::string cell = std::string("CELL") + std::string(6, '\0');
  vars.push_back({"dst_location", {"max_loc_str_len"}, {cell.begin(), cell.end()}, NC_CHAR});
  if (nfixed > 0) {
    dims["num_fixed_values"] = y.fixed.size();
    dims["num_fixed_dst"] = nfixed;
    std::vector<double> values, counts, targets;
    for (const auto& [v, t] : y.fixed) {
      values.push_back(v);
      counts.push_back(static_cast<double>(t.size()));
      targets.insert(targets.end(), t.begin(), t.end());
    }
    vars.push_back({"fixed_values", {"num_fixed_values"}, values, NC_DOUBLE});
    vars.push_back({"num_dst_per_fixed_value", {"num_fixed_values"}, counts});
    vars.push_back({"dst_address_fixed", {"num_fixed_dst"}, targets});
  }
  write_nc(path, dims, vars, NC_64BIT_OFFSET,
           {{"version", y.version},
            {"src_grid_name", "atm_grid"},
            {"dst_grid_name", "ocn_grid"},
            {"contains_links", y.contains_links.empty() ? (n > 0 ? "TRUE" : "FALSE") : y.contains_links},
            {"contains_fixed_dst", nfixed > 0 ? "TRUE" : "FALSE"}});
}

// Every (source, destination) decomposition pair and mode of this rank count, with the
// unmapped value given: calls f(sd, dd, options, label).
void each_remap_case(i64 na, i64 nb, double unmapped,
                     const std::function<void(const estuary::Decomp&, const estuary::Decomp&,
                                              const estuary::RemapOptions&, const std::string&)>& f) {
  const int p = etest::world_size(), r = etest::world_rank();
  for (const auto& [sk, dk] : rtest::decomp_pairs())
    for (const rtest::Mode& m : rtest::modes()) {
      estuary::RemapOptions o;
      o.location = m.location;
      o.order = m.order;
      o.unmapped_value = unmapped;
      f(rtest::decomp(sk, na, p, r), rtest::decomp(dk, nb, p, r), o, sk + " -> " + dk + ", " + m.name());
    }
}

}  // namespace

TEST(Weights, YacFilesWithFixedValuesAppliedAsYac) {
  const int p = etest::world_size(), r = etest::world_rank();
  const SharedDir tmp;
  const i64 na = 41, nb = 37;
  const double unmapped = -999.0;
  // Targets t % 6 == 1 take -5.5, t % 6 == 4 take 42, t % 9 == 0 nothing (unmapped); the rest
  // 3 links each, from scattered sources, in a shuffled file order.
  YacFile y;
  std::vector<double> want(static_cast<std::size_t>(nb), unmapped), x(static_cast<std::size_t>(na));
  for (i64 s = 0; s < na; ++s) x[static_cast<std::size_t>(s)] = std::sin(0.37 * static_cast<double>(s)) + 2.0;
  std::vector<std::array<double, 3>> links;  // (dst, src, w), 0-based
  for (i64 t = 0; t < nb; ++t) {
    if (t % 6 == 1 || t % 6 == 4 || t % 9 == 0) continue;
    for (i64 k = 0; k < 3; ++k)
      links.push_back({static_cast<double>(t), static_cast<double>((7 * t + 13 * k) % na), 0.2 + 0.1 * static_cast<double>(k) + 0.001 * static_cast<double>(t)});
  }
  for (std::size_t k = 0; k < links.size(); ++k) std::swap(links[k], links[(k * 17 + 5) % links.size()]);
  for (const auto& [t, s, w] : links) {
    y.dst.push_back(t + 1);
    y.src.push_back(s + 1);
    y.w.push_back(w);
  }
  // The serial reference: each row summed in file order from 0 (bfb's order).
  std::vector<double> sum(static_cast<std::size_t>(nb), 0.0);
  std::vector<char> has(static_cast<std::size_t>(nb), 0);
  for (const auto& [t, s, w] : links) {
    sum[static_cast<std::size_t>(t)] += w * x[static_cast<std::size_t>(s)];
    has[static_cast<std::size_t>(t)] = 1;
  }
  y.fixed = {{-5.5, {}}, {42.0, {}}};
  for (i64 t = 0; t < nb; ++t) {
    if (has[static_cast<std::size_t>(t)]) want[static_cast<std::size_t>(t)] = sum[static_cast<std::size_t>(t)];
    if (t % 6 == 1) y.fixed[0].second.push_back(static_cast<double>(t + 1)), want[static_cast<std::size_t>(t)] = -5.5;
    if (t % 6 == 4) y.fixed[1].second.push_back(static_cast<double>(t + 1)), want[static_cast<std::size_t>(t)] = 42.0;
  }
  const std::string file = tmp.path + "/yac_fixed.nc";
  if (r == 0) write_yac(file, y);
  // Fixed values alone (contains_links FALSE): every target fixed.
  YacFile only;
  only.fixed = {{3.25, {}}};
  for (i64 t = 0; t < nb; ++t) only.fixed[0].second.push_back(static_cast<double>(nb - t));  // any order
  const std::string only_file = tmp.path + "/yac_fixed_only.nc";
  if (r == 0) write_yac(only_file, only);
  MPI_Barrier(MPI_COMM_WORLD);

  const estuary::WeightSlice slice = estuary::read_weights(file, MPI_COMM_WORLD);
  EXPECT_TRUE(slice.info.yac);
  EXPECT_EQ(slice.info.src_grid_name, "atm_grid");
  EXPECT_EQ(slice.info.dst_grid_name, "ocn_grid");
  i64 fixed_here = static_cast<i64>(slice.links.fixed_row.size()), fixed_all = 0;
  MPI_Allreduce(&fixed_here, &fixed_all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(fixed_all, static_cast<i64>(y.fixed[0].second.size() + y.fixed[1].second.size()));

  each_remap_case(na, nb, unmapped, [&](const estuary::Decomp& sd, const estuary::Decomp& dd,
                                        const estuary::RemapOptions& o, const std::string& label) {
      estuary::Remap rm(file, sd, dd, MPI_COMM_WORLD, o);
      const std::vector<double> xs = rtest::pick(x, sd);
      std::vector<double> got(static_cast<std::size_t>(dd.size()), 7.0);
      rm.run(xs, got);
      std::ostringstream why;
      EXPECT_TRUE(rtest::close_to(got, want, dd, o.order == estuary::RemapOrder::bfb ? 0.0 : 1e-15, why))
          << label << ": " << why.str();
      // With a fractional mask (all 1: W x / W 1) the fixed targets keep their values.
      const std::vector<double> ones(xs.size(), 1.0);
      std::vector<double> got_frac(got.size(), 7.0);
      const estuary::RemapFracField ff[1] = {{xs, ones, got_frac}};
      rm.run(ff);
      const std::vector<i64> idx = dd.to_indices();
      for (std::size_t j = 0; j < idx.size(); ++j) {
        const i64 t = idx[j];
        if (t % 6 == 1 || t % 6 == 4) {
          EXPECT_EQ(got_frac[j], want[static_cast<std::size_t>(t)]) << label << ", fraction, point " << t;
        }
      }
      // Fixed values alone.
      estuary::Remap ro(only_file, sd, dd, MPI_COMM_WORLD, o);
      std::vector<double> got_only(got.size(), 7.0);
      ro.run(xs, got_only);
      for (std::size_t j = 0; j < got_only.size(); ++j) EXPECT_EQ(got_only[j], 3.25) << label << ", fixed only";
  });

  // What YAC refuses, and what estuary cannot apply: refused naming the file and the place.
  struct Bad {
    std::string name, place;
    std::function<void(YacFile&)> change;
  };
  const std::vector<Bad> bad = {
      {"version.nc", "attribute version", [](YacFile& b) { b.version = "yac weight file 2.0"; }},
      {"two_fields.nc", "dimension num_src_fields", [](YacFile& b) { b.src_fields = 2; }},
      {"per_field.nc", "variable num_links_per_src_field", [](YacFile& b) { b.links_per_field = 5; }},
      {"flag.nc", "attribute contains_links", [](YacFile& b) { b.contains_links = "yes"; }},
      {"link_and_fixed.nc", "dst_address_fixed", [&](YacFile& b) { b.fixed[0].second.push_back(b.dst[0]); }},
      {"fixed_out.nc", "destination", [&](YacFile& b) { b.fixed[1].second.push_back(static_cast<double>(nb + 3)); }},
  };
  for (const Bad& b : bad) {
    YacFile c = y;
    b.change(c);
    const std::string f = tmp.path + "/" + b.name;
    if (r == 0) write_yac(f, c);
    MPI_Barrier(MPI_COMM_WORLD);
    const estuary::Decomp sd = estuary::gen::block(na, r, p), dd = estuary::gen::block(nb, r, p);
    std::string text;
    EXPECT_TRUE(raises([&] { estuary::Remap rm(f, sd, dd, MPI_COMM_WORLD); }, {b.place}, text)) << b.name << ": " << text;
    EXPECT_NE(text.find(f), std::string::npos) << b.name << ": " << text;
  }
}

// xESMF's saved weights (Regridder.to_netcdf: S, col, row alone) mark each target no source
// reaches, when it is to be NaN (a destination mask or unmapped_to_nan: add_nans_to_weights),
// with one link (row, 1, NaN). Applied as xESMF's product does: those targets NaN, targets
// absent from the file the unmapped value, the rest the sum in file order; a NaN link on a
// target that has other links is refused, naming the file.
TEST(Weights, XesmfNanLinksMarkTargetsNaN) {
  const int p = etest::world_size(), r = etest::world_rank();
  const SharedDir tmp;
  const i64 na = 19, nb = 23;
  std::vector<double> row, col, S, x(static_cast<std::size_t>(na)), want(static_cast<std::size_t>(nb), -999.0);
  for (i64 s = 0; s < na; ++s) x[static_cast<std::size_t>(s)] = 1.0 + 0.1 * static_cast<double>(s * s % 7);
  for (i64 t = 0; t < nb; ++t) {
    if (t % 5 == 2) {  // xESMF's NaN mark
      row.push_back(static_cast<double>(t + 1)), col.push_back(1.0), S.push_back(std::nan(""));
      want[static_cast<std::size_t>(t)] = std::nan("");
    } else if (t % 7 != 3) {  // two links; t % 7 == 3: absent, unmapped
      double sum = 0.0;
      for (i64 k = 0; k < 2; ++k) {
        const i64 s = (3 * t + 5 * k) % na;
        const double w = 0.25 + 0.5 * static_cast<double>(k);
        row.push_back(static_cast<double>(t + 1)), col.push_back(static_cast<double>(s + 1)), S.push_back(w);
        sum += w * x[static_cast<std::size_t>(s)];
      }
      want[static_cast<std::size_t>(t)] = sum;
    }
  }
  const std::string file = tmp.path + "/xesmf_nan.nc", bad = tmp.path + "/xesmf_nan_bad.nc";
  if (r == 0) {
    const std::map<std::string, std::size_t> d{{"n_s", S.size()}};
    // row stored as reals (whole numbers), as some writers store indices
    write_nc(file, d, {{"S", {"n_s"}, S, NC_DOUBLE}, {"col", {"n_s"}, col}, {"row", {"n_s"}, row, NC_DOUBLE}}, NC_NETCDF4);
    std::vector<double> row2 = row, col2 = col, S2 = S;  // a NaN on a target with links
    row2.push_back(1.0), col2.push_back(1.0), S2.push_back(std::nan(""));
    write_nc(bad, {{"n_s", S2.size()}}, {{"S", {"n_s"}, S2, NC_DOUBLE}, {"col", {"n_s"}, col2}, {"row", {"n_s"}, row2}},
             NC_NETCDF4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  each_remap_case(na, nb, -999.0, [&](const estuary::Decomp& sd, const estuary::Decomp& dd,
                                      const estuary::RemapOptions& o, const std::string& label) {
      estuary::Remap rm(file, sd, dd, MPI_COMM_WORLD, o);
      std::vector<double> got(static_cast<std::size_t>(dd.size()), 7.0);
      rm.run(rtest::pick(x, sd), got);
      const std::vector<i64> idx = dd.to_indices();
      for (std::size_t j = 0; j < idx.size(); ++j) {
        const double w = want[static_cast<std::size_t>(idx[j])];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(got[j])) << label << ", point " << idx[j];
        } else {
          EXPECT_NEAR(got[j], w, 1e-15 * std::abs(w)) << label << ", point " << idx[j];
        }
      }
  });
  std::string text;
  EXPECT_TRUE(raises([&] { estuary::Remap rm(bad, estuary::gen::block(na, r, p), estuary::gen::block(nb, r, p), MPI_COMM_WORLD); },
                     {bad, "destination point 0 has links and a fixed value"}, text))
      << text;
}
