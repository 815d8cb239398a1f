// Shared by the I/O tests: the test grid, the decompositions a model might use, and the values
// every rank can compute from a global index alone (the reference the readers compare with).
#pragma once

#include <mpi.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "estuary/grid.hpp"
#include "estuary/io.hpp"
#include "mpi_test_util.hpp"

namespace iotest {

using etest::i64;
using estuary::Decomp;

constexpr i64 kNx = 12, kNy = 8, kNlev = 3;
constexpr i64 kNh = kNx * kNy;

// Exactly representable in float: the file's float variables compare bit for bit.
inline double value3(i64 g, i64 step) { return 0.5 * static_cast<double>(g) + static_cast<double>(step); }
inline double value2(i64 g, i64 step) { return std::sin(0.1 * static_cast<double>(g)) + 0.25 * static_cast<double>(step); }

// The decompositions of a (levels, y, x) array the tests write from ("block", "cyclic",
// "boxes", "perm"); nlev = 1 for a 2-D field.
inline Decomp decomp_of(const std::string& kind, i64 nlev, int p, int r) {
  const i64 n = nlev * kNh;
  if (kind == "block") return etest::block(n, p, r);
  if (kind == "cyclic") return etest::cyclic(n, p, r);
  if (kind == "perm") return etest::permuted_block(n, p, r, 11);
  if (kind == "boxes") {
    // A px x py grid of boxes over (y, x), every level: the classic 2-D model decomposition.
    const auto [px, py] = etest::grid_2d(p);
    const auto [y0, y1] = etest::block_range(kNy, px, r % px);
    const auto [x0, x1] = etest::block_range(kNx, py, r / px);
    return Decomp::box({nlev, kNy, kNx}, {0, y0, x0}, {nlev, y1 - y0, x1 - x0});
  }
  if (kind == "rank0") return r == 0 ? Decomp::stripes(n, {{0, n, 1}}) : Decomp::empty(n);
  throw std::runtime_error("unknown decomposition " + kind);
}

inline std::vector<double> values(const Decomp& d, i64 step, bool three_d) {
  std::vector<double> v;
  for (i64 g : d.to_indices()) v.push_back(three_d ? value3(g, step) : value2(g, step));
  return v;
}

inline estuary::Grid grid_part(int p, int r) {
  return estuary::GridGen::lonlat(kNx, kNy).make(etest::cyclic(kNh, p, r));
}

// The message of the Error that reading `yaml` (named "bad.yaml") throws, or "no error".
inline std::string config_error(const std::string& yaml) {
  try {
    estuary::io::OutputConfig::from_yaml_string(yaml, "bad.yaml");
  } catch (const estuary::Error& e) {
    return e.what();
  }
  return "no error";
}

#ifdef ESTUARY_IO_TEST_DIR
// A test's own output folder: <test dir>/<prefix>np<ranks>/<name> (runs on several rank counts
// at once do not share files).
inline std::string out_dir(const std::string& prefix, const std::string& name) {
  return std::string(ESTUARY_IO_TEST_DIR) + "/" + prefix + "np" + std::to_string(etest::world_size()) + "/" + name;
}
#endif

inline estuary::io::FieldDef field(const std::string& name, bool three_d, const Decomp& d) {
  estuary::io::FieldDef f;
  f.name = name;
  f.grid = "atm";
  if (three_d) f.levels = {10.0, 50.0, 200.0};
  f.decomp = d;
  f.units = std::string(three_d ? "K" : "m");
  f.long_name = name + " long name";
  // (Built with std::string(...), not assigned from char*: GCC 12's -Wrestrict misfires.)
  f.standard_name = std::string(three_d ? "sea_water_temperature" : "sea_surface_height_above_geoid");
  return f;
}

// One output run of `cfg` over MPI_COMM_WORLD: servers serve; model ranks run `model(out, p, r)`
// (p ranks, this one r, of the model communicator), which declares, writes and closes.
inline void run_output(const estuary::io::OutputConfig& cfg,
                       const std::function<void(estuary::io::Output&, int, int)>& model) {
  estuary::io::Output out(cfg, MPI_COMM_WORLD);
  if (out.is_server()) {
    out.serve();
    return;
  }
  int p = 1, r = 0;
  MPI_Comm_size(out.model_comm(), &p);
  MPI_Comm_rank(out.model_comm(), &r);
  model(out, p, r);
}

// end_def's error on every rank ("no error" when it passes) for one file "f" (output_freq 1h)
// of `fields_yaml`, written in `dir`, after `declare(out, p, r)` declared the model's grids and
// fields (p ranks, this one r, of the model communicator). In server mode the servers' serve()
// must fail alike (the same check on the catalog), not hang.
inline std::string end_def_error(const std::string& dir, const std::string& fields_yaml, bool server,
                                 const std::function<void(estuary::io::Output&, int, int)>& declare) {
  const std::string yaml = "output:\n  directory: " + dir + (server ? "\n  mode: server" : "") +
                           "\n  files:\n    - name: f\n      output_freq: 1h\n      fields:\n" + fields_yaml;
  const estuary::io::OutputConfig cfg = estuary::io::OutputConfig::from_yaml_string(yaml, "e.yaml");
  std::string msg = "no error";
  try {
    run_output(cfg, [&](estuary::io::Output& out, int p, int r) {
      declare(out, p, r);
      out.end_def();
    });
  } catch (const estuary::Error& e) {
    msg = e.what();
  }
  return msg;
}

}  // namespace iotest
