// bench/io — output bandwidth of the ways to get a model's 3-D fields into one netCDF file, in
// one run over the same volume (issue 8, paper 003):
//   dd           raw sequential disk bandwidth: dd conv=fdatasync of the volume, random bytes
//   gather       MPI_Gatherv of each field to rank 0, reorder, serial netCDF write
//   gather_slices the same, written one latitude slice (all levels) per call as a latitude-slab
//                model holds it: non-contiguous in the file (paper 003's lesson)
//   remap_dD     estuary remap-and-write, serverless, D = 1, 2, 4 writer ranks
//   server_d1    estuary server mode (last rank writes); reports the model ranks' time too
// Every method ends with fdatasync of its file, so all of them count the time to reach disk.
//
//   cpmip        a toy model loop (--days simulated days of --dt s steps, --work stencil sweeps
//                per field and step) with daily, 6-hourly and hourly averaged output, in server
//                mode (last rank, D = 1) and serverless (D = 2), against the same loop without
//                output: the CPMIP Data Output Cost and Data Intensity (paper 002, Table 7), and a
//                dd conv=fdatasync of each frequency's volume
//
//   derived      the model ranks' cost of one derived field (expr: sqrt(f0*f0 + f1*f1)) per step
//                against a plain field's, in the same run (IoStats::derived_s against the rest of
//                model_io_s), serverless D = 1, for an averaged output (per step: accumulate) and
//                an instant one (per step: the hand-over and the write); the derived field in a
//                file of its own, so that each field's time holds its own variable's write
//
//   cmip         a CMIP-style output set (issue 21): --cmip-3d 3-D fields (nx x ny x nlev) as monthly
//                means and --cmip-2d 2-D fields as daily means, float, over --cmip-days days of
//                --cmip-dt s steps on a noleap calendar, serverless (D = 1) and in server mode (the
//                last rank writes), against the same loop without output and a dd of the same
//                volume in the same run: the writers' throughput as a fraction of dd's, and the
//                model ranks' slow-down. Off unless --cmip 1. --cmip-writers: D (or auto).
//
//   tune         the CMIP-style set with estuary's automatic writers and buffers (no `writers`,
//                no `buffer_records`) and with each hand-picked writer count 1, 2, 4, ..., P
//                (server mode: 1 .. P-1, each with 2 and 32 buffer records), in one run: each
//                run's time, and auto / best (issue 21's target: within 15 %). Off unless --tune 1.
//
//   cmip-compress the CMIP-style set in netCDF-4, serverless, with each compression setting
//                (none, deflate 1, bitgroom/granularbr --cmip-digits digits + deflate 1,
//                bitround --cmip-bits bits + deflate 1, zstd 3, bitround + zstd 3): the files'
//                size against the uncompressed netCDF-4 one and the writers' throughput (bytes
//                of data over their write time) against dd in the same run. A setting this
//                netCDF cannot write (zstd without its filter) prints its error.
//
//   regrid       output on another grid (a file's grid:, issue 21): with --regrid RECIPE (e.g.
//                lonlat:360x180) and --regrid-method (conservative, bilinear, bicubic, distwgt,
//                nn), the fields written every step on the model grid alone, then in the same
//                invocation both on the model grid and on RECIPE (serverless, D = 1), averaged
//                (one record at the end) and instant (a record a step): the model ranks' time per
//                step of each (max over ranks), the remap's part (IoStats::regrid_s), the set-up
//                (the first generates the weights and caches them, the second reads them) and the
//                ratio of the two runs. Off unless --regrid is given.
//
//   mpirun -n P build/bench/io [--nx 720] [--ny 360] [--nlev 5] [--fields 2] [--steps 3]
//                              [--dir /tmp/estuary_bench_io] [--repeat 2] [--format cdf5|netcdf4]
//                              [--bandwidth 1] [--cpmip 1] [--days 1] [--dt 1800] [--work 20]
//                              [--derived 1] [--cmip 0] [--cmip-days 365] [--cmip-dt 21600]
//                              [--cmip-3d 10] [--cmip-2d 20] [--cmip-writers 1|auto] [--tune 0]
//                              [--cmip-compress 0] [--cmip-digits 3] [--cmip-bits 10] [--regrid RECIPE]
//                              [--regrid-method conservative]
// One JSON object per method: bytes, seconds (min and median of repeats), MB/s, ratio to dd.
#include <fcntl.h>
#include <mpi.h>
#include <netcdf.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"

namespace {

using i64 = std::int64_t;

void fdatasync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::close(fd);
  }
}

// The model layout: px x py boxes over (y, x), all levels (what an ocean model holds).
struct Layout {
  i64 nx, ny, nlev;
  i64 y0, y1, x0, x1;
  estuary::Decomp decomp() const {
    return estuary::Decomp::box({nlev, ny, nx}, {0, y0, x0}, {nlev, y1 - y0, x1 - x0});
  }
};

Layout layout(i64 nx, i64 ny, i64 nlev, int p, int r) {
  int a = 1;
  for (int k = 1; k * k <= p; ++k)
    if (p % k == 0) a = k;
  const int px = a, py = p / a;
  const int ry = r % px, rx = r / px;
  return {nx, ny, nlev, ny * ry / px, ny * (ry + 1) / px, nx * rx / py, nx * (rx + 1) / py};
}

std::vector<double> field_values(const estuary::Decomp& d, int f, i64 step) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(d.size()));
  for (i64 g : d.to_indices()) v.push_back(std::sin(1e-4 * static_cast<double>(g) + f) + static_cast<double>(step));
  return v;
}

// "f<k>" by appending: GCC 12's -Wrestrict misfires on "f" + std::to_string(k).
std::string field_name(int k) {
  std::string s(1, 'f');
  s += std::to_string(k);
  return s;
}

std::string yaml_for(const std::string& dir, const std::string& mode, int writers, int nfields,
                     const std::string& format = "cdf5", const std::string& freq = "1h",
                     const std::string& op = "instant") {
  std::string y = "output:\n  mode: " + mode + "\n  writers: " + std::to_string(writers) +
                  "\n  directory: " + dir + "\n  catch_sigterm: false\n  format: " + format +
                  "\n  files:\n    - name: out\n      output_freq: " + freq + "\n      fields:\n";
  for (int f = 0; f < nfields; ++f)
    y += "        - {name: f" + std::to_string(f) + ", operation: " + op + ", precision: double}\n";
  return y;
}

// The toy model's work: `sweeps` passes of a 3-point smoother over each field.
void model_work(std::vector<std::vector<double>>& fields, int sweeps) {
  for (auto& v : fields)
    for (int k = 0; k < sweeps; ++k) {
      double prev = v.empty() ? 0 : v[0];
      for (std::size_t i = 1; i + 1 < v.size(); ++i) {
        const double cur = v[i];
        v[i] = 0.25 * (prev + 2 * cur + v[i + 1]) + 1e-6;
        prev = cur;
      }
    }
}

// The model ranks' definitions: the grid part and `nfields` 3-D fields f<k> on this rank's box
// of p model ranks (grid "g", levels 0..nlev-1). Returns the fields' values.
std::vector<std::vector<double>> define_model(estuary::io::Output& out, i64 nx, i64 ny, i64 nlev, int nfields, int p,
                                              int r) {
  const Layout l = layout(nx, ny, nlev, p, r);
  out.def_grid("g", estuary::GridGen::lonlat(nx, ny).make(
                        estuary::Decomp::box({ny, nx}, {l.y0, l.x0}, {l.y1 - l.y0, l.x1 - l.x0})));
  std::vector<std::vector<double>> f;
  for (int k = 0; k < nfields; ++k) {
    estuary::io::FieldDef fd;
    fd.name = field_name(k);
    fd.grid = std::string(1, 'g');  // (GCC 12's -Wrestrict misfires on literals)
    fd.levels.resize(static_cast<std::size_t>(nlev));
    for (i64 z = 0; z < nlev; ++z) fd.levels[static_cast<std::size_t>(z)] = static_cast<double>(z);
    fd.decomp = l.decomp();
    out.def_field(fd);
    f.push_back(field_values(fd.decomp, k, 1));
  }
  return f;
}

// The dd command writing `bytes` of random data to dir/dd.bin with fdatasync. Not /dev/zero:
// storage may write zero blocks faster than data (thin-provisioned virtual disks detect them:
// on the project's VM 0.9-1.05 GB/s for zeros against 0.40 GB/s for random bytes), and the
// output is data. dd reads a 64 MiB block of random bytes (made once, in memory) over and over.
std::string dd_command(const std::string& dir, i64 bytes) {
  static const std::string pattern = [] {
    const std::string p = "/dev/shm/estuary_bench_io_random_" + std::to_string(::getpid());
    if (std::system(("head -c 67108864 /dev/urandom > " + p).c_str()) != 0) std::cerr << "bench/io: no " << p << "\n";
    std::atexit([] { std::remove(("/dev/shm/estuary_bench_io_random_" + std::to_string(::getpid())).c_str()); });
    return p;
  }();
  return "sh -c 'while cat " + pattern + "; do :; done | dd of=" + dir + "/dd.bin bs=1M iflag=fullblock count=" +
         std::to_string(std::max<i64>(1, bytes >> 20)) + " conv=fdatasync' 2>/dev/null";
}

double dd_seconds(const std::string& dir, i64 bytes) {
  const std::string cmd = dd_command(dir, bytes);
  const double t0 = MPI_Wtime();
  if (std::system(cmd.c_str()) != 0) std::cerr << "bench/io: dd failed\n";
  const double t = MPI_Wtime() - t0;
  std::filesystem::remove(dir + "/dd.bin");
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  i64 nx = 720, ny = 360, nlev = 5, steps = 3, days = 1, dt = 1800;
  int nfields = 2, repeat = 2, work = 20;
  std::string dir = "/tmp/estuary_bench_io", format = "cdf5";
  bool bandwidth = true, cpmip = true, derived = true, cmip = false;
  i64 cmip_days = 365, cmip_dt = 21600;
  int cmip_3d = 10, cmip_2d = 20, cmip_digits = 3, cmip_bits = 10;
  bool tune = false, cmip_compress = false;
  std::string cmip_writers = "1";
  std::string regrid, regrid_method = "conservative";
  bench::Cli cli("bench/io: output bandwidth of the ways to get 3-D fields into one netCDF file, one JSON line per method");
  cli.opt("nx", nx, "grid points along longitude")->check(CLI::PositiveNumber);
  cli.opt("ny", ny, "grid points along latitude")->check(CLI::PositiveNumber);
  cli.opt("nlev", nlev, "levels")->check(CLI::PositiveNumber);
  cli.opt("fields", nfields, "3-D fields written")->check(CLI::PositiveNumber);
  cli.opt("steps", steps, "records written per method")->check(CLI::PositiveNumber);
  cli.opt("repeat", repeat, "repeats per method (min and median reported)")->check(CLI::PositiveNumber);
  cli.opt("dir", dir, "where the files go");
  cli.opt("format", format, "the output files' format (the YAML key format: cdf5, netcdf4, ...)");
  cli.flag("bandwidth", bandwidth, "run the bandwidth methods (dd, gather, remap_dD, server_d1)");
  cli.flag("cpmip", cpmip, "run the CPMIP toy-model loop");
  cli.flag("derived", derived, "measure a derived field's cost per step against a plain field's");
  cli.opt("days", days, "cpmip: simulated days")->check(CLI::PositiveNumber);
  cli.opt("dt", dt, "cpmip: time step in seconds")->check(CLI::PositiveNumber);
  cli.opt("work", work, "cpmip: stencil sweeps per field and step")->check(CLI::NonNegativeNumber);
  cli.flag("cmip", cmip, "run the CMIP-style set (monthly 3-D means, daily 2-D means, noleap year)");
  cli.opt("cmip-days", cmip_days, "cmip: simulated days")->check(CLI::PositiveNumber);
  cli.opt("cmip-dt", cmip_dt, "cmip: time step in seconds (a divisor of a day)")->check(CLI::PositiveNumber);
  cli.opt("cmip-3d", cmip_3d, "cmip: 3-D fields, monthly means")->check(CLI::NonNegativeNumber);
  cli.opt("cmip-2d", cmip_2d, "cmip: 2-D fields, daily means")->check(CLI::NonNegativeNumber);
  cli.opt("regrid", regrid, "a grid recipe (lonlat:360x180): measure the output on that grid too (off: none)");
  cli.opt("regrid-method", regrid_method, "regrid: conservative, bilinear, bicubic, distwgt or nn");
  cli.opt("cmip-writers", cmip_writers, "cmip, cmip-compress: writers (a count, or auto: estuary's choice)");
  cli.flag("tune", tune, "the CMIP-style set with the automatic writers and buffers and with each hand-picked count");
  cli.flag("cmip-compress", cmip_compress, "the CMIP-style set (netCDF-4, serverless) with each compression setting");
  cli.opt("cmip-digits", cmip_digits, "cmip-compress: significant digits of bitgroom and granularbr")->check(CLI::PositiveNumber);
  cli.opt("cmip-bits", cmip_bits, "cmip-compress: significant bits of bitround")->check(CLI::PositiveNumber);
  cli.parse(argc, argv);
  const i64 n = nx * ny * nlev;
  const i64 bytes = n * 8 * nfields * steps;
  if (rank == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);

  auto report = [&](const std::string& method, int writers, const std::vector<double>& t, double dd_s,
                    double model_s, double commit_s = -1) {
    if (rank != 0) return;
    const double tmin = *std::min_element(t.begin(), t.end());
    bench::Json j;
    j.add("bench", "io").add("method", method).add("ranks", ranks).add("writers", writers);
    j.add("nx", nx).add("ny", ny).add("nlev", nlev).add("fields", nfields).add("steps", steps);
    j.add("bytes", bytes).add("min_s", tmin).add("median_s", bench::median(t));
    j.add("mb_per_s", static_cast<double>(bytes) / 1e6 / tmin);
    if (dd_s > 0) j.add("fraction_of_dd", dd_s / tmin);
    if (model_s >= 0) j.add("model_io_s", model_s);
    // The writers' time reserving each record's space and committing its record count (atomic
    // records, issue 17), per run: its share of min_s is what that safety costs.
    if (commit_s >= 0) j.add("commit_s", commit_s).add("commit_fraction", commit_s / tmin);
    std::cout << j.str() << std::endl;
  };

  try {
   if (bandwidth) {
    // ---- dd: the disk's sequential bandwidth for the same volume ----
    std::vector<double> tdd;
    for (int it = 0; it < repeat; ++it) {
      double t = 0;
      if (rank == 0) {
        const std::string cmd = dd_command(dir, bytes);
        const double t0 = MPI_Wtime();
        if (std::system(cmd.c_str()) != 0) std::cerr << "bench/io: dd failed\n";
        t = MPI_Wtime() - t0;
        std::filesystem::remove(dir + "/dd.bin");
      }
      tdd.push_back(t);
    }
    const double dd_s = rank == 0 ? *std::min_element(tdd.begin(), tdd.end()) : 0;
    report("dd", 1, tdd, 0, -1);

    const Layout lay = layout(nx, ny, nlev, ranks, rank);
    const estuary::Decomp d = lay.decomp();

    // The model's fields, computed once outside the timed loops (the model's own work).
    std::vector<std::vector<double>> data;
    for (int f = 0; f < nfields; ++f) data.push_back(field_values(d, f, 1));

    // ---- gather to rank 0, then serial write: reordered in memory and written in one call
    // per field ("gather"), or written latitude slice by latitude slice as they lie, each
    // slice (all levels of one latitude) non-contiguous in the file ("gather_slices": paper
    // 003's sequential lesson) ----
    for (const bool slices : {false, true}) {
      std::vector<double> t;
      std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
      const int mine = static_cast<int>(d.size());
      MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      for (int r = 1; r < ranks; ++r) displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r - 1)] + counts[static_cast<std::size_t>(r - 1)];
      // Rank 0 knows every rank's layout (computed, not sent) to reorder into file order.
      std::vector<double> all(rank == 0 ? static_cast<std::size_t>(n) : 0), global(all.size());
      for (int it = 0; it < repeat; ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        const std::string path = dir + "/gather.nc";
        int nc = -1, var[64] = {};
        if (rank == 0) {
          nc_create(path.c_str(), NC_CLOBBER | NC_64BIT_DATA, &nc);
          int dims[4];
          nc_def_dim(nc, "time", NC_UNLIMITED, &dims[0]);
          nc_def_dim(nc, "lev", static_cast<size_t>(nlev), &dims[1]);
          nc_def_dim(nc, "y", static_cast<size_t>(ny), &dims[2]);
          nc_def_dim(nc, "x", static_cast<size_t>(nx), &dims[3]);
          for (int f = 0; f < nfields; ++f)
            nc_def_var(nc, field_name(f).c_str(), NC_DOUBLE, 4, dims, &var[f]);
          nc_enddef(nc);
        }
        for (i64 s = 1; s <= steps; ++s)
          for (int f = 0; f < nfields; ++f) {
            const std::vector<double>& v = data[static_cast<std::size_t>(f)];
            MPI_Gatherv(v.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
                        MPI_COMM_WORLD);
            if (rank == 0) {
              for (int r = 0; r < ranks; ++r) {
                const Layout l = layout(nx, ny, nlev, ranks, r);
                std::size_t at = static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]);
                for (i64 k = 0; k < nlev; ++k)
                  for (i64 y = l.y0; y < l.y1; ++y)
                    for (i64 x = l.x0; x < l.x1; ++x) global[static_cast<std::size_t>((k * ny + y) * nx + x)] = all[at++];
              }
              const size_t st[4] = {static_cast<size_t>(s - 1), 0, 0, 0};
              const size_t ct[4] = {1, static_cast<size_t>(nlev), static_cast<size_t>(ny), static_cast<size_t>(nx)};
              if (!slices) {
                nc_put_vara_double(nc, var[f], st, ct, global.data());
              } else {
                // U(x, lev, y) in memory order of a latitude-slab model: one call a latitude.
                std::vector<double> slice(static_cast<std::size_t>(nlev * nx));
                for (i64 y = 0; y < ny; ++y) {
                  for (i64 k = 0; k < nlev; ++k)
                    std::copy_n(global.begin() + (k * ny + y) * nx, nx, slice.begin() + k * nx);
                  const size_t ss[4] = {static_cast<size_t>(s - 1), 0, static_cast<size_t>(y), 0};
                  const size_t cs[4] = {1, static_cast<size_t>(nlev), 1, static_cast<size_t>(nx)};
                  nc_put_vara_double(nc, var[f], ss, cs, slice.data());
                }
              }
            }
          }
        if (rank == 0) {
          nc_close(nc);
          fdatasync_path(path);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t.push_back(MPI_Wtime() - t0);
      }
      report(slices ? "gather_slices" : "gather", 1, t, dd_s, -1);
    }

    // ---- remap-and-write (serverless D = 1, 2, 4) and server mode ----
    const estuary::Grid grid = estuary::GridGen::lonlat(nx, ny).make(
        estuary::Decomp::box({ny, nx}, {lay.y0, lay.x0}, {lay.y1 - lay.y0, lay.x1 - lay.x0}));
    struct Run { std::string mode; int writers; };
    std::vector<Run> runs;
    for (int w : {1, 2, 4})
      if (w <= ranks) runs.push_back({"serverless", w});
    if (ranks >= 2) runs.push_back({"server", 1});
    for (const Run& run : runs) {
      std::vector<double> t;
      double model_s = 0, commit_s = 0;
      for (int it = 0; it < repeat; ++it) {
        const std::string sub = dir + "/" + run.mode + std::to_string(run.writers);
        const auto cfg = estuary::io::OutputConfig::from_yaml_string(yaml_for(sub, run.mode, run.writers, nfields, format));
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0, mio = 0, commit = 0;
        {
          estuary::io::Output out(cfg, MPI_COMM_WORLD);
          if (out.is_server()) {
            out.serve();  // its share of end_def, then records until the model closes
            commit = out.stats().commit_s;
          } else {
            int p = 1, r = 0;
            MPI_Comm_size(out.model_comm(), &p);
            MPI_Comm_rank(out.model_comm(), &r);
            const Layout l = layout(nx, ny, nlev, p, r);
            const estuary::Decomp md = l.decomp();
            const estuary::Grid g = estuary::GridGen::lonlat(nx, ny).make(
                estuary::Decomp::box({ny, nx}, {l.y0, l.x0}, {l.y1 - l.y0, l.x1 - l.x0}));
            out.def_grid("g", g);
            // (Names built once; std::string(1, 'g'): GCC 12's -Wrestrict misfires on literals.)
            std::vector<std::string> names;
            for (int f = 0; f < nfields; ++f) names.push_back(field_name(f));
            for (int f = 0; f < nfields; ++f) {
              estuary::io::FieldDef fd;
              fd.name = names[static_cast<std::size_t>(f)];
              fd.grid = std::string(1, 'g');
              fd.levels.resize(static_cast<std::size_t>(nlev));
              for (i64 k = 0; k < nlev; ++k) fd.levels[static_cast<std::size_t>(k)] = static_cast<double>(k);
              fd.decomp = md;
              out.def_field(fd);
            }
            out.end_def();
            std::vector<std::vector<double>> mdata;
            for (int f = 0; f < nfields; ++f) mdata.push_back(field_values(md, f, 1));
            MPI_Barrier(out.model_comm());  // set-up (plans, file creation) is not timed
            t0 = MPI_Wtime();
            const double m0 = out.stats().model_io_s;
            for (i64 s = 1; s <= steps; ++s)
              for (int f = 0; f < nfields; ++f) {
                const std::vector<double>& v = mdata[static_cast<std::size_t>(f)];
                out.write(names[static_cast<std::size_t>(f)], 3600.0 * static_cast<double>(s), v);
              }
            mio = out.stats().model_io_s - m0;  // time the model spent in write calls
            out.close();
            commit = out.stats().commit_s;
          }
        }
        if (rank == 0) fdatasync_path(sub + "/out.nc");
        MPI_Barrier(MPI_COMM_WORLD);
        double el = MPI_Wtime() - t0;
        el = bench::max_over_ranks(rank == 0 ? el : 0, MPI_COMM_WORLD);
        t.push_back(el);
        model_s = std::max(model_s, bench::max_over_ranks(mio, MPI_COMM_WORLD));
        commit_s += bench::max_over_ranks(commit, MPI_COMM_WORLD);
      }
      report(run.mode == "server" ? "server_d" + std::to_string(run.writers)
                                  : "remap_d" + std::to_string(run.writers),
             run.writers, t, dd_s, model_s / repeat, commit_s / repeat);
    }
    (void)grid;
   }
    if (cpmip) {
      // ---- CPMIP: Data Output Cost and Data Intensity of a toy model loop ----
      const i64 nsteps = days * 86400 / dt;
      struct Mode { std::string mode; int writers; };
      std::vector<Mode> modes;
      if (ranks >= 2) modes.push_back({"server", 1});
      modes.push_back({"serverless", std::min(2, ranks)});
      for (const Mode& m : modes) {
        const bool srv = m.mode == "server";
        const int model_ranks = srv ? ranks - m.writers : ranks;
        const bool is_model = rank < model_ranks;
        MPI_Comm mcomm = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, is_model ? 0 : 1, rank, &mcomm);
        // The same loop without output, on the same model ranks (the servers idle).
        double base = 0;
        {
          std::vector<std::vector<double>> f;
          if (is_model) {
            const Layout l = layout(nx, ny, nlev, model_ranks, rank);
            for (int k = 0; k < nfields; ++k) f.push_back(field_values(l.decomp(), k, 1));
          }
          MPI_Barrier(MPI_COMM_WORLD);
          const double t0 = MPI_Wtime();
          if (is_model)
            for (i64 s = 1; s <= nsteps; ++s) model_work(f, work);
          MPI_Barrier(MPI_COMM_WORLD);
          base = MPI_Wtime() - t0;
        }
        for (const std::string freq : {"1d", "6h", "1h"}) {
          const std::string sub = dir + "/cpmip_" + m.mode + "_" + freq;
          const auto cfg = estuary::io::OutputConfig::from_yaml_string(
              yaml_for(sub, m.mode, m.writers, nfields, format, freq, "average"));
          MPI_Barrier(MPI_COMM_WORLD);
          const double s0 = MPI_Wtime();
          double t0 = 0, t1 = 0;  // model ranks: the loop, from after end_def to files on disk
          estuary::io::Output out(cfg, MPI_COMM_WORLD);
          if (out.is_server()) {
            out.serve();
          } else {
            int p = 1, r = 0;
            MPI_Comm_size(out.model_comm(), &p);
            MPI_Comm_rank(out.model_comm(), &r);
            std::vector<std::vector<double>> f = define_model(out, nx, ny, nlev, nfields, p, r);
            out.end_def();
            MPI_Barrier(out.model_comm());
            t0 = MPI_Wtime();
            for (i64 s = 1; s <= nsteps; ++s) {
              model_work(f, work);
              for (int k = 0; k < nfields; ++k)
                out.write(field_name(k), static_cast<double>(dt * s), f[static_cast<std::size_t>(k)]);
            }
            out.close();
            if (r == 0) fdatasync_path(sub + "/out.nc");
            MPI_Barrier(out.model_comm());
            t1 = MPI_Wtime();
          }
          // Set-up (plans, file creation, coordinates) is a one-off cost, reported apart.
          const double run_s = bench::max_over_ranks(t1 - t0, MPI_COMM_WORLD);
          const double total_s = bench::max_over_ranks(MPI_Wtime() - s0, MPI_COMM_WORLD);
          const estuary::io::IoReport rep = out.report(run_s, base);
          const estuary::io::IoReport est = out.report(run_s);  // without the measured baseline
          double dd_s = 0;
          if (rank == 0) dd_s = dd_seconds(dir, rep.bytes_written);
          if (rank == 0) {
            bench::Json j;
            j.add("bench", "io_cpmip").add("mode", m.mode).add("writers", m.writers).add("ranks", ranks);
            j.add("model_ranks", rep.model_ranks).add("format", format).add("output_freq", freq);
            j.add("nx", nx).add("ny", ny).add("nlev", nlev).add("fields", nfields).add("steps", nsteps);
            j.add("dt_s", dt).add("work", work);
            j.add("bytes", rep.bytes_written).add("files", rep.files_created);
            j.add("setup_s", total_s - run_s).add("run_s", run_s).add("run_without_io_s", base).add("model_io_s", rep.model_io_s);
            j.add("write_mb_per_s", rep.write_mb_per_s);
            // The model ranks' own slow-down, leaving out the cost of dedicated server cores.
            j.add("model_time_increase", base > 0 ? run_s / base - 1 : 0.0);
            j.add("data_output_cost", rep.data_output_cost).add("data_output_cost_estimated", est.data_output_cost);
            j.add("data_intensity_gb_per_ch", rep.data_intensity).add("core_hours", rep.core_hours);
            j.add("dd_s", dd_s).add("dd_mb_per_s", static_cast<double>(rep.bytes_written) / 1e6 / dd_s);
            std::cout << j.str() << std::endl;
          }
        }
        MPI_Comm_free(&mcomm);
      }
    }
    // ---- the CMIP-style set: monthly 3-D means and daily 2-D means over a noleap year ----
    // One run of it: `c` says the mode, the writers and buffers (0: estuary's automatic choice),
    // the format and what every field adds (compression). The loop without output is timed on
    // as many model ranks as the run had (cached per count).
    struct CmipCase {
      std::string mode = "serverless";
      int writers = 1, buffers = 0;
      std::string format = "cdf5", field_extra, label;
    };
    struct CmipResult {
      bool ok = false;
      std::string error;
      estuary::io::IoReport rep;
      double run_s = 0, base = 0, dd_s = 0, file_bytes = 0;
    };
    std::map<int, double> base_by_model_ranks;
    const i64 cmip_steps = cmip_days * 86400 / cmip_dt;
    auto cmip_yaml = [&](const std::string& sub, const CmipCase& c) {
      std::string y = "output:\n  mode: " + c.mode + "\n  directory: " + sub + "\n  catch_sigterm: false\n  format: " +
                      c.format + "\n  calendar: noleap\n  reference_time: 2000-01-01\n";
      if (c.writers > 0) y += "  writers: " + std::to_string(c.writers) + "\n";
      if (c.buffers > 0) y += "  buffer_records: " + std::to_string(c.buffers) + "\n";
      y += "  files:\n";
      for (const auto& [name, freq, prefix, count] :
           {std::tuple{"cmip_mon", "1mo", 't', cmip_3d}, std::tuple{"cmip_day", "1d", 's', cmip_2d}}) {
        if (count == 0) continue;
        y += std::string("    - name: ") + name + "\n      output_freq: " + freq + "\n      fields:\n";
        for (int k = 0; k < count; ++k)
          y += std::string("        - {name: ") + prefix + std::to_string(k) + ", operation: average, precision: float" +
               c.field_extra + "}\n";
      }
      return y;
    };
    auto cmip_fields = [&](const Layout& l) {
      const estuary::Decomp d3 = l.decomp();
      const estuary::Decomp d2 = estuary::Decomp::box({ny, nx}, {l.y0, l.x0}, {l.y1 - l.y0, l.x1 - l.x0});
      std::vector<std::vector<double>> f;  // the 3-D fields, then the 2-D ones
      for (int k = 0; k < cmip_3d; ++k) f.push_back(field_values(d3, k, 1));
      for (int k = 0; k < cmip_2d; ++k) f.push_back(field_values(d2, k, 1));
      return f;
    };
    auto cmip_base = [&](int model_ranks) {
      if (base_by_model_ranks.count(model_ranks)) return base_by_model_ranks[model_ranks];
      const bool is_model = rank < model_ranks;
      std::vector<std::vector<double>> f;
      if (is_model) f = cmip_fields(layout(nx, ny, nlev, model_ranks, rank));
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (is_model)
        for (i64 s = 1; s <= cmip_steps; ++s) model_work(f, work);
      MPI_Barrier(MPI_COMM_WORLD);
      return base_by_model_ranks[model_ranks] = MPI_Wtime() - t0;
    };
    auto cmip_run = [&](const CmipCase& c) {
      CmipResult res;
      const std::string sub = dir + "/cmip_" + c.mode + (c.label.empty() ? "" : "_" + c.label);
      const auto cfg = estuary::io::OutputConfig::from_yaml_string(cmip_yaml(sub, c), "bench cmip");
      double t0 = 0, t1 = 0;
      try {
        estuary::io::Output out(cfg, MPI_COMM_WORLD);
        if (out.is_server()) {
          out.serve();
        } else {
          int p = 1, r = 0;
          MPI_Comm_size(out.model_comm(), &p);
          MPI_Comm_rank(out.model_comm(), &r);
          const Layout l = layout(nx, ny, nlev, p, r);
          std::vector<std::vector<double>> f = cmip_fields(l);
          out.def_grid("g", estuary::GridGen::lonlat(nx, ny).make(
                                estuary::Decomp::box({ny, nx}, {l.y0, l.x0}, {l.y1 - l.y0, l.x1 - l.x0})));
          std::vector<std::string> names;
          for (int k = 0; k < cmip_3d + cmip_2d; ++k) {
            estuary::io::FieldDef fd;
            const bool three_d = k < cmip_3d;
            fd.name = (three_d ? "t" : "s") + std::to_string(three_d ? k : k - cmip_3d);
            fd.grid = std::string(1, 'g');
            if (three_d)
              for (i64 z = 0; z < nlev; ++z) fd.levels.push_back(10.0 * static_cast<double>(z + 1));
            fd.decomp = three_d ? l.decomp() : estuary::Decomp::box({ny, nx}, {l.y0, l.x0}, {l.y1 - l.y0, l.x1 - l.x0});
            out.def_field(fd);
            names.push_back(fd.name);
          }
          out.end_def();
          MPI_Barrier(out.model_comm());
          t0 = MPI_Wtime();
          for (i64 s = 1; s <= cmip_steps; ++s) {
            model_work(f, work);
            for (std::size_t k = 0; k < f.size(); ++k) out.write(names[k], static_cast<double>(cmip_dt * s), f[k]);
          }
          out.close();
          if (r == 0)
            for (const char* file : {"/cmip_mon.nc", "/cmip_day.nc"}) fdatasync_path(sub + file);
          MPI_Barrier(out.model_comm());
          t1 = MPI_Wtime();
        }
        res.run_s = bench::max_over_ranks(t1 - t0, MPI_COMM_WORLD);
        res.rep = out.report(res.run_s);
        res.ok = true;
      } catch (const estuary::Error& e) {  // every rank alike (a zstd this netCDF lacks, say)
        res.error = e.what();
        return res;
      }
      res.base = cmip_base(res.rep.model_ranks);
      res.rep.run_without_io_s = res.base;
      if (rank == 0) {
        res.dd_s = dd_seconds(dir, res.rep.bytes_written);
        std::error_code ec;
        for (const char* file : {"/cmip_mon.nc", "/cmip_day.nc"})
          if (std::filesystem::exists(sub + file)) res.file_bytes += static_cast<double>(std::filesystem::file_size(sub + file, ec));
        if (!c.label.empty()) std::filesystem::remove_all(sub, ec);  // the next run's room on the disk
      }
      return res;
    };
    auto cmip_json = [&](const char* bench_name, const CmipCase& c, const CmipResult& r) {
      bench::Json j;
      j.add("bench", bench_name).add("mode", c.mode).add("ranks", ranks).add("label", c.label);
      j.add("writers_configured", c.writers > 0 ? std::to_string(c.writers) : std::string("auto"));
      j.add("buffers_configured", c.buffers > 0 ? std::to_string(c.buffers) : std::string("auto"));
      if (!r.ok) return j.add("error", r.error);
      const double dd_mbs = static_cast<double>(r.rep.bytes_written) / 1e6 / r.dd_s;
      j.add("writers", r.rep.writers).add("buffer_records", r.rep.buffer_records).add("writers_auto", r.rep.writers_auto);
      j.add("model_ranks", r.rep.model_ranks).add("format", c.format).add("calendar", "noleap");
      j.add("nx", nx).add("ny", ny).add("nlev", nlev).add("fields_3d_monthly", cmip_3d).add("fields_2d_daily", cmip_2d);
      j.add("days", cmip_days).add("dt_s", cmip_dt).add("steps", cmip_steps).add("work", work);
      j.add("bytes", r.rep.bytes_written).add("files", r.rep.files_created).add("records", r.rep.records_written);
      j.add("run_s", r.run_s).add("run_without_io_s", r.base).add("model_io_s", r.rep.model_io_s);
      j.add("model_time_increase", r.base > 0 ? r.run_s / r.base - 1 : 0.0);
      // The writers' throughput (bytes over their time in writes and closes) and the whole
      // run's (bytes over the model loop), each against dd's for the same volume.
      j.add("write_s", r.rep.write_s).add("write_mb_per_s", r.rep.write_mb_per_s);
      j.add("dd_s", r.dd_s).add("dd_mb_per_s", dd_mbs).add("write_fraction_of_dd", r.rep.write_mb_per_s / dd_mbs);
      // The same without the writers' waits for each other's data (IoStats::peer_wait_s): the
      // file system's part of their time.
      j.add("file_write_s", r.rep.file_write_s).add("file_write_mb_per_s", r.rep.file_write_mb_per_s);
      j.add("file_write_fraction_of_dd", r.rep.file_write_mb_per_s / dd_mbs);
      j.add("run_mb_per_s", static_cast<double>(r.rep.bytes_written) / 1e6 / r.run_s);
      j.add("file_bytes", r.file_bytes);
      j.add("tuning", r.rep.tuning);
      return j;
    };
    std::vector<std::string> cmip_modes{"serverless"};
    if (ranks >= 2) cmip_modes.push_back("server");
    const int cmip_d = cmip_writers == "auto" ? 0 : std::stoi(cmip_writers);
    if (cmip) {
      for (const std::string& mode : cmip_modes) {
        CmipCase c;
        c.mode = mode;
        c.writers = cmip_d;
        c.format = format;
        const CmipResult r = cmip_run(c);
        if (rank == 0) std::cout << cmip_json("io_cmip", c, r).str() << std::endl;
      }
    }
    if (tune) {
      // The automatic choice against every hand-picked writer count (and, in server mode,
      // buffer size) in the same run, on the same set: the run time of each, and auto / best.
      for (const std::string& mode : cmip_modes) {
        std::vector<CmipCase> cases;
        CmipCase a;
        a.mode = mode;
        a.writers = 0;
        a.format = format;
        a.label = "auto";
        cases.push_back(a);
        const int most = mode == "server" ? ranks - 1 : ranks;
        std::vector<int> counts;
        for (int w = 1; w <= most; w *= 2) counts.push_back(w);
        if (counts.back() != most) counts.push_back(most);
        for (int w : counts)
          for (int b : mode == "server" ? std::vector<int>{2, 32} : std::vector<int>{0}) {
            CmipCase c = a;
            c.writers = w;
            c.buffers = b;
            c.label = std::string(1, 'd');  // (appended: GCC 12's -Wrestrict misfires on + chains)
            c.label.append(std::to_string(w));
            if (b > 0) c.label.append("_b").append(std::to_string(b));
            cases.push_back(c);
          }
        double auto_s = 0, best_s = 0;
        std::string best;
        for (const CmipCase& c : cases) {
          const CmipResult r = cmip_run(c);
          if (rank == 0) std::cout << cmip_json("io_tune", c, r).str() << std::endl;
          if (!r.ok) continue;
          if (c.label == "auto") auto_s = r.run_s;
          else if (best.empty() || r.run_s < best_s) {
            best_s = r.run_s;
            best = c.label;
          }
        }
        if (rank == 0) {
          bench::Json j;
          j.add("bench", "io_tune_summary").add("mode", mode).add("ranks", ranks).add("days", cmip_days);
          j.add("auto_run_s", auto_s).add("best_hand_picked", best).add("best_run_s", best_s);
          j.add("auto_over_best", best_s > 0 ? auto_s / best_s : 0.0);
          std::cout << j.str() << std::endl;
        }
      }
    }
    if (cmip_compress) {
      // netCDF-4 compression of the CMIP set, serverless: each setting's file size against the
      // uncompressed netCDF-4 file, and the writers' throughput against dd in the same run.
      const std::string sig = std::to_string(cmip_digits), bits = std::to_string(cmip_bits);
      std::vector<std::pair<std::string, std::string>> settings{
          {"none", ""},
          {"deflate1", ", deflate: 1"},
          {"bitgroom" + sig + "_deflate1", ", quantize: bitgroom, significant_digits: " + sig + ", deflate: 1"},
          {"granularbr" + sig + "_deflate1", ", quantize: granularbr, significant_digits: " + sig + ", deflate: 1"},
          {"bitround" + bits + "_deflate1", ", quantize: bitround, significant_bits: " + bits + ", deflate: 1"},
          {"zstd3", ", zstd: 3"},
          {"bitround" + bits + "_zstd3", ", quantize: bitround, significant_bits: " + bits + ", zstd: 3"}};
      double plain = 0;
      for (const auto& [label, extra] : settings) {
        CmipCase c;
        c.writers = cmip_d;
        c.format = "netcdf4";
        c.field_extra = extra;
        c.label = label;
        const CmipResult r = cmip_run(c);
        if (label == "none") plain = r.file_bytes;
        if (rank == 0) {
          bench::Json j = cmip_json("io_cmip_compress", c, r);
          if (r.ok) j.add("size_ratio", plain > 0 ? r.file_bytes / plain : 0.0);
          std::cout << j.str() << std::endl;
        }
      }
    }
    if (derived) {
      // ---- a derived field against the plain ones it is computed from, in one run ----
      const std::string expr = nfields >= 2 ? "sqrt(f0*f0 + f1*f1)" : "2 * f0 + 1";
      for (const std::string op : {"average", "instant"}) {
        const std::string sub = dir + "/derived_" + op;
        // average: one record at the end, so a step costs the accumulation; instant: a record
        // every step, so a step costs the hand-over (rearrangement and write, serverless D = 1).
        // The derived field has a file of its own: a file's record is written by the write that
        // completes it, which would otherwise charge the plain fields' write to the derived one.
        const std::string freq = op == "average" ? std::to_string(steps) + "h" : "1h";
        std::string y = yaml_for(sub, "serverless", 1, nfields, format, freq, op);
        y += "    - name: derived\n      output_freq: " + freq + "\n      fields:\n        - {name: speed, expr: \"" +
             expr + "\", operation: " + op + ", precision: double}\n";
        const auto cfg = estuary::io::OutputConfig::from_yaml_string(y, "bench derived");
        double mio = 0, der = 0;
        i64 local = 0;
        {
          estuary::io::Output out(cfg, MPI_COMM_WORLD);
          const std::vector<std::vector<double>> f = define_model(out, nx, ny, nlev, nfields, ranks, rank);
          local = static_cast<i64>(f[0].size());
          out.end_def();
          MPI_Barrier(MPI_COMM_WORLD);
          const double m0 = out.stats().model_io_s, d0 = out.stats().derived_s;
          for (i64 s = 1; s <= steps; ++s)
            for (int k = 0; k < nfields; ++k) out.write(field_name(k), 3600.0 * static_cast<double>(s), f[static_cast<std::size_t>(k)]);
          mio = out.stats().model_io_s - m0;
          der = out.stats().derived_s - d0;
          out.close();
        }
        // The slowest model rank of each: per step, one plain field and the derived field.
        const double plain_s = bench::max_over_ranks((mio - der) / static_cast<double>(nfields * steps), MPI_COMM_WORLD);
        const double derived_s = bench::max_over_ranks(der / static_cast<double>(steps), MPI_COMM_WORLD);
        if (rank == 0) {
          bench::Json j;
          j.add("bench", "io").add("method", "derived_" + op).add("ranks", ranks).add("writers", 1);
          j.add("nx", nx).add("ny", ny).add("nlev", nlev).add("fields", nfields).add("steps", steps);
          j.add("expr", expr).add("local_values_rank0", local);
          j.add("plain_field_s_per_step", plain_s).add("derived_field_s_per_step", derived_s);
          j.add("derived_over_plain", plain_s > 0 ? derived_s / plain_s : 0.0);
          j.add("derived_ns_per_value", 1e9 * derived_s / static_cast<double>(local));
          std::cout << j.str() << std::endl;
        }
      }
    }
    if (!regrid.empty()) {
      // ---- output on another grid: the model grid alone, then the model grid and `regrid` ----
      // average: one record at the end, so a step costs the remap and the accumulation; instant:
      // a record every step, so a step also costs the regridded file's hand-over and write. The
      // weights are generated once and cached, so the second operation's set-up reads them.
      const std::string cache = dir + "/rmp_bench_regrid.nc";
      if (rank == 0) std::filesystem::remove(cache);
      for (const std::string op : {"average", "instant"}) {
        const std::string freq = op == "average" ? std::to_string(steps) + "h" : "1h";
        double per_step[2] = {0, 0}, remap_s = 0, setup_s[2] = {0, 0};
        for (int with = 0; with < 2; ++with) {
          const std::string sub = dir + "/regrid_" + op + std::to_string(with);
          std::string y = yaml_for(sub, "serverless", 1, nfields, format, freq, op);
          if (with) {
            y += "    - name: regridded\n      output_freq: " + freq + "\n      grid: {target: \"" + regrid +
                 "\", method: " + regrid_method + ", weights: " + cache + "}\n      fields:\n";
            for (int f = 0; f < nfields; ++f)
              y += "        - {name: f" + std::to_string(f) + ", operation: " + op + ", precision: double}\n";
          }
          const auto cfg = estuary::io::OutputConfig::from_yaml_string(y, "bench regrid");
          double mio = 0, rs = 0;
          {
            const double t0 = MPI_Wtime();
            estuary::io::Output out(cfg, MPI_COMM_WORLD);
            const std::vector<std::vector<double>> f = define_model(out, nx, ny, nlev, nfields, ranks, rank);
            out.end_def();
            setup_s[with] = bench::max_over_ranks(MPI_Wtime() - t0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            const double m0 = out.stats().model_io_s, r0 = out.stats().regrid_s;
            for (i64 s = 1; s <= steps; ++s)
              for (int k = 0; k < nfields; ++k)
                out.write(field_name(k), 3600.0 * static_cast<double>(s), f[static_cast<std::size_t>(k)]);
            mio = out.stats().model_io_s - m0;
            rs = out.stats().regrid_s - r0;
            out.close();
          }
          per_step[with] = bench::max_over_ranks(mio / static_cast<double>(steps), MPI_COMM_WORLD);
          if (with) remap_s = bench::max_over_ranks(rs / static_cast<double>(steps), MPI_COMM_WORLD);
        }
        if (rank == 0) {
          bench::Json j;
          j.add("bench", "io").add("method", "regrid_" + op).add("ranks", ranks).add("writers", 1);
          j.add("nx", nx).add("ny", ny).add("nlev", nlev).add("fields", nfields).add("steps", steps);
          j.add("target", regrid).add("regrid_method", regrid_method);
          j.add("model_grid_s_per_step", per_step[0]).add("both_grids_s_per_step", per_step[1]);
          j.add("remap_s_per_step", remap_s).add("setup_s", setup_s[0]).add("setup_with_weights_s", setup_s[1]);
          j.add("ratio", per_step[0] > 0 ? per_step[1] / per_step[0] : 0.0);
          std::cout << j.str() << std::endl;
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "bench/io: " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
