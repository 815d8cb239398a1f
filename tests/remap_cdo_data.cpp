// Test fixture (ctest FIXTURES_SETUP): writes the test grids as SCRIP files and a field per
// grid, runs CDO once for every case (weights with gencon/gendis/genbil, genbic/gencon2 for
// the multi-weight cases and genlaf for a field of classes, then `cdo remap` of the field), and
// rewrites each weight file but genlaf's with estuary's writer for CDO to apply too.
// test_remap then compares estuary with these results on 1-8 ranks without running CDO itself.
#include <mpi.h>
#include <netcdf.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/weights.hpp"
#include "remap_cases.hpp"

namespace {

bool run(const std::string& cmd) {
  std::printf("+ %s\n", cmd.c_str());
  std::fflush(stdout);
  if (std::system(cmd.c_str()) == 0) return true;
  std::fprintf(stderr, "remap_cdo_data: failed: %s\n", cmd.c_str());
  return false;
}

// The field file: f(ncells); `cdo -setgrid` attaches the SCRIP grid to it. Masked points hold
// the missing value: CDO takes a source mask from the field's missing values (not from
// grid_imask), both when it generates weights and when it checks that a weight file fits.
void write_field(const std::string& path, const estuary::Grid& g, bool classes = false) {
  std::vector<double> v(static_cast<std::size_t>(g.size()));
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = !g.valid(static_cast<std::int64_t>(k)) ? rtest::kMissing
           : classes                               ? rtest::class_field(g.lon[k], g.lat[k])
                                                   : rtest::field(0, g.lon[k], g.lat[k]);
  int nc = -1, d = -1, var = -1;
  const double mv = rtest::kMissing;
  if (nc_create(path.c_str(), NC_CLOBBER, &nc) != NC_NOERR || nc_def_dim(nc, "ncells", v.size(), &d) != NC_NOERR ||
      nc_def_var(nc, "f", NC_DOUBLE, 1, &d, &var) != NC_NOERR ||
      nc_put_att_double(nc, var, "_FillValue", NC_DOUBLE, 1, &mv) != NC_NOERR ||
      nc_put_att_double(nc, var, "missing_value", NC_DOUBLE, 1, &mv) != NC_NOERR || nc_enddef(nc) != NC_NOERR ||
      nc_put_var_double(nc, var, v.data()) != NC_NOERR || nc_close(nc) != NC_NOERR)
    throw estuary::Error("cannot write the field", "file " + path);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: remap_cdo_data DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  try {
    std::filesystem::create_directories(dir);
    for (const auto& [name, gen] : rtest::grids()) {
      const estuary::Grid g = gen.make();
      estuary::write_scrip_grid(rtest::grid_file(dir, name), g);
      write_field(rtest::field_file(dir, name), g);
      write_field(rtest::class_file(dir, name), g, true);
    }
    const std::string cdo = "cdo -s -O ";
    std::vector<rtest::Case> all = rtest::cases();
    for (const rtest::Case& c : rtest::multi_cases()) all.push_back(c);
    for (const rtest::Case& c : rtest::laf_cases()) all.push_back(c);
    for (const rtest::Case& c : all) {
      const std::string sg = rtest::grid_file(dir, c.src), dg = rtest::grid_file(dir, c.dst);
      const std::string w = rtest::weight_file(dir, c);
      const bool laf = c.method == "genlaf";  // remaps the field of classes
      const std::string input =
          " -setgrid," + sg + " " + (laf ? rtest::class_file(dir, c.src) : rtest::field_file(dir, c.src));
      ok = ok && run(cdo + c.method + "," + dg + input + " " + w);  // masked points get no links
      ok = ok && run(cdo + "-b F64 remap," + dg + "," + w + input + " " + rtest::cdo_out_file(dir, c));
      if (!ok || laf) continue;
      // The same links through estuary's reader and writer, with both grids, for CDO again. A
      // multi-weight file comes back folded into one column (value and gradient terms in one
      // matrix), which CDO applies as it stands: its result checks the folding independently of
      // estuary's Remap.
      const estuary::WeightSlice s = estuary::read_weights(w, MPI_COMM_SELF);
      const estuary::Grid src = rtest::grid(c.src).make(), dst = rtest::grid(c.dst).make();
      estuary::WeightWriteOptions wo;
      wo.src_grid = &src;
      wo.dst_grid = &dst;
      // CDO reads a file named Bicubic as four columns (write_weights refuses that name): a
      // Bilinear one it applies as the plain matrix it is.
      wo.map_method = s.info.num_wgts == 4 ? "Bilinear remapping (bicubic folded by estuary)" : s.info.map_method;
      wo.normalization = s.info.normalization;
      estuary::write_weights(rtest::rewritten_file(dir, c), s.links, src.size(), dst.size(), MPI_COMM_SELF, wo);
      // CDO falls back to making its own weights, with a warning, when a file does not fit the
      // input: the fixture fails then, so CDO really applied estuary's file.
      const std::string out = rtest::cdo_rewritten_out(dir, c) + " 2>" + dir + "/cdo_stderr.txt";
      ok = ok && run(cdo + "-b F64 remap," + dg + "," + rtest::rewritten_file(dir, c) + input + " " + out);
      ok = ok && run("! grep -i 'not used' " + dir + "/cdo_stderr.txt");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remap_cdo_data: %s\n", e.what());
    ok = false;
  }
  if (ok) {  // written last: the MPI tests check for it
    std::FILE* f = std::fopen((dir + "/complete").c_str(), "w");
    if (f) std::fclose(f);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
