// The coupled toy of `make demo`: an atmosphere on a reduced Gaussian grid and an ocean on a
// tripolar curvilinear grid with land exchange fields every coupling hour through estuary,
// with weights generated at set-up (bilinear one way, 4-nearest-neighbour the other) and the
// GLOBAL conservation correction on the fluxes (configuration: toy_atm_ocn.yaml).
//
//   mpirun -n 4 toy_atm_ocn [run_folder]             one executable, half the ranks each model
//   mpirun -n 2 toy_atm_ocn atmos [run_folder] : -n 2 toy_atm_ocn ocean [run_folder]
//
// It prints the fields coupled, the conservation error of every flux exchange and the
// coupler's timings, and leaves the log and restart files in the run folder.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "estuary/couple.hpp"
#include "estuary/globalsum.hpp"
#include "estuary/grid.hpp"

namespace {

constexpr double kPi = 3.14159265358979323846;

// Analytic "physics": smooth fields of position and time, so that every value is checkable.
double sst(double lon, double lat, double t) {
  return 288.0 - 30.0 * std::sin(lat * kPi / 180.0) * std::sin(lat * kPi / 180.0) +
         2.0 * std::cos((lon + t / 240.0) * kPi / 180.0);
}
double heat_flux(double lon, double lat, double t) {
  return 150.0 * std::cos(lat * kPi / 180.0) + 40.0 * std::sin((2.0 * lon - t / 120.0) * kPi / 180.0);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int arg = 1;
  std::string role;
  if (argc > 1 && (std::string(argv[1]) == "atmos" || std::string(argv[1]) == "ocean")) role = argv[arg++];
  const std::string folder = std::filesystem::absolute(argc > arg ? argv[arg] : "estuary_demo").string();
  if (role.empty()) role = rank < std::max(1, size / 2) ? "atmos" : "ocean";
  if (size < 2) {
    if (rank == 0) std::fprintf(stderr, "toy_atm_ocn: run it on 2 or more ranks (mpirun -n 4 toy_atm_ocn)\n");
    MPI_Finalize();
    return 2;
  }
  if (rank == 0) {
    std::filesystem::create_directories(folder);
    // $ESTUARY_CONFIG (set by `estuary demo` to the copy a wheel ships), else the source tree's.
    const char* config = std::getenv("ESTUARY_CONFIG");
    std::filesystem::copy_file(config && *config ? config : ESTUARY_DEMO_CONFIG, folder + "/estuary.yaml",
                               std::filesystem::copy_options::overwrite_existing);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  int status = 0;
  try {
    estuary::ComponentOptions opt;
    opt.directory = folder;  // finds estuary.yaml there; restarts and the log go there too
    estuary::Component comp(role, opt);
    MPI_Comm local = comp.comm();
    int lrank = 0, lsize = 1;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    const bool atm = role == "atmos";

    // Grid and partition, as an OASIS model would define them (ig_paral arrays).
    const estuary::GridGen gen = atm ? estuary::GridGen::reduced_gaussian(32) : estuary::GridGen::tripolar(180, 140).with_land();
    const std::int64_t n = gen.size();
    estuary::Decomp part = estuary::Decomp::empty(n);
    if (atm) {  // apple: a contiguous range of points (whole latitude rows stay together)
      const std::int64_t lo = lrank * n / lsize, hi = (lrank + 1) * n / lsize;
      const std::int64_t apple[3] = {1, lo, hi - lo};
      part = estuary::oasis_partition(apple, n);
    } else {  // box: bands of rows of the 180 x 140 grid
      const std::int64_t nx = 180, ny = 140, j0 = lrank * ny / lsize, j1 = (lrank + 1) * ny / lsize;
      const std::int64_t box[5] = {2, j0 * nx, nx, j1 - j0, nx};
      part = estuary::oasis_partition(box, n);
    }
    const estuary::Grid grid = gen.make(part);
    const int pid = comp.def_partition(part);
    comp.def_grid(atm ? "rgg" : "torc", pid, grid);
    const std::vector<std::string> outs = atm ? std::vector<std::string>{"HEATFLX", "FRESHW"} : std::vector<std::string>{"SST", "ICEFRAC"};
    const std::vector<std::string> ins = atm ? std::vector<std::string>{"A_SST", "A_ICE"} : std::vector<std::string>{"O_QNS", "O_EMP"};
    std::vector<int> out_id, in_id;
    for (const auto& f : outs) out_id.push_back(comp.def_var(f, pid, estuary::Direction::out));
    for (const auto& f : ins) in_id.push_back(comp.def_var(f, pid, estuary::Direction::in));
    const double t_setup = MPI_Wtime();
    comp.enddef();
    const double setup_s = MPI_Wtime() - t_setup;

    const double dt = atm ? 1200.0 : 3600.0, runtime = comp.setup().runtime;
    const std::size_t m = static_cast<std::size_t>(grid.size());
    std::vector<double> a(m), b(m), ga(m), gb(m), prod(m);
    double worst_conservation = 0.0;
    int exchanges = 0;
    for (double t = 0; t < runtime; t += dt) {
      // Receive first (the coupler returns at once between coupling times), then step, then send.
      for (std::size_t k = 0; k < in_id.size(); ++k) {
        std::vector<double>& dst = k == 0 ? ga : gb;
        const estuary::Info info = comp.get(in_id[k], t, dst);
        if (info == estuary::Info::ok) continue;
        exchanges += k == 0 ? 1 : 0;
        if (!atm && k == 0) {  // the ocean checks that the heat flux kept its global integral
          for (std::size_t i = 0; i < m; ++i) prod[i] = grid.valid(static_cast<std::int64_t>(i)) ? dst[i] * grid.area[i] : 0.0;
          const double got = estuary::global_sum(prod, local, estuary::SumMethod::reprosum);
          const double sent = comp.last_source_integral(in_id[k]);
          const double err = std::fabs(got - sent) / std::max(std::fabs(sent), 1e-300);
          worst_conservation = std::max(worst_conservation, err);
          if (lrank == 0 && (t == 0 || std::fmod(t, 6 * 3600.0) == 0))
            std::printf("ocean  t=%6.0f s  got O_QNS: integral %.12e, atmosphere sent %.12e, relative error %.1e\n", t, got,
                        sent, err);
        }
      }
      for (std::size_t i = 0; i < m; ++i) {
        a[i] = atm ? heat_flux(grid.lon[i], grid.lat[i], t) : sst(grid.lon[i], grid.lat[i], t);
        b[i] = atm ? 1e-5 * std::cos(grid.lat[i] * kPi / 90.0) : std::max(0.0, std::min(1.0, (std::fabs(grid.lat[i]) - 60.0) / 20.0));
      }
      comp.put(out_id[0], t, a);
      comp.put(out_id[1], t, b);
    }
    const std::vector<estuary::FieldTimers> timers = comp.timers();
    comp.terminate();
    if (lrank == 0) {
      std::printf("%s: %lld points on %d ranks, set-up %.2f s, %d coupling exchanges received\n", role.c_str(),
                  static_cast<long long>(n), lsize, setup_s, exchanges);
      for (std::size_t k = 0; k < ins.size(); ++k) std::printf("%s: received %s\n", role.c_str(), ins[k].c_str());
      for (std::size_t k = 0; k < outs.size(); ++k) std::printf("%s: sent %s\n", role.c_str(), outs[k].c_str());
      if (!atm) std::printf("ocean: worst relative conservation error of the heat flux over the run: %.1e\n", worst_conservation);
      for (const auto& ti : timers)
        std::printf("%s: %s:\n        put %.3f s  get %.3f s (of which waiting %.3f s)  transfer+remap %.3f s\n", role.c_str(),
                    ti.field.c_str(), ti.put_s, ti.get_s, ti.wait_s, ti.remap_s);
      if (!atm && worst_conservation > 1e-12) {
        std::fprintf(stderr, "ocean: conservation error %.1e exceeds 1e-12\n", worst_conservation);
        status = 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "toy_atm_ocn (%s, rank %d): %s\n", role.c_str(), rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("log and restart files in %s\n", folder.c_str());
  MPI_Finalize();
  return status;
}
