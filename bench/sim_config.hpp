// bench/sim --config: a coupled set-up's own exchanges (its namcouple or YAML, its grids, its
// weights, its components' partitions) replayed at any rank count without the ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "estuary/sim.hpp"

namespace bench {

struct ConfigRun {
  std::string config;                   // namcouple or YAML
  std::vector<std::string> components;  // NAME:RANKS:KIND[:GRID[=RECIPE],...]
  std::vector<std::string> grids;       // GRID=RECIPE
  std::string rundir = ".";             // relative weight files and grids.nc/masks.nc are here
  std::string workdir;                  // generated weights are cached here (default: rundir)
  std::vector<std::int64_t> totals;     // total rank counts (components scaled); empty: as given
  std::vector<std::string> algos{"p2p", "butterfly"};  // p2p, butterfly, adaptive
  std::vector<std::string> locations{"src", "dst"};
  std::function<estuary::sim::Platform(std::int64_t)> platform;
  estuary::sim::SimOptions options;
  std::int64_t matrix_bins = 0;
};

// Prints one JSON object per coupling and rank count; returns the number of failed runs.
// Initialises and finalises MPI (weight generation runs on MPI_COMM_SELF) before replaying.
int simulate_config(const ConfigRun& run, int* argc, char*** argv);

}  // namespace bench
