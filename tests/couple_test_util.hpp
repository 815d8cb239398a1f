// Shared pieces of the coupler tests: files written by rank 0, a synthetic weight matrix with
// its serial application (the independent reference), analytic model fields.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "estuary/couple.hpp"
#include "estuary/weights.hpp"

namespace ctest_util {

using i64 = std::int64_t;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// The two components of a two-sided test: the first half of the world's ranks is "atm" (the
// source side), the rest "ocn" (the target side); on one rank one component, "solo", holds both.
struct TwoSides {
  bool atm = false, ocn = false;
  std::string comp;
  int index = 0, count = 1;  // this rank's place among its side's ranks
};

inline TwoSides two_sides() {
  const int r = world_rank(), p = world_size();
  if (p == 1) return {true, true, "solo", 0, 1};
  const int h = p / 2;
  TwoSides s;
  s.atm = r < h;
  s.ocn = !s.atm;
  s.comp = s.atm ? "atm" : "ocn";
  s.index = s.atm ? r : r - h;
  s.count = s.atm ? h : p - h;
  return s;
}

// A fresh folder shared by all ranks (rank 0 creates it).
inline std::string fresh_dir(const std::string& name, MPI_Comm comm = MPI_COMM_WORLD) {
  const std::string d = std::filesystem::temp_directory_path().string() + "/estuary_couple_" + name + "_np" +
                        std::to_string(world_size());
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) {
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
  }
  MPI_Barrier(comm);
  return d;
}

inline void write_text(const std::string& path, const std::string& text, MPI_Comm comm = MPI_COMM_WORLD) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) std::ofstream(path) << text;
  MPI_Barrier(comm);
}

// A sparse matrix nd x ns with 1-4 links per row (some rows none), in a fixed scrambled order.
inline estuary::Links synthetic_links(i64 ns, i64 nd) {
  estuary::Links l;
  for (i64 r = 0; r < nd; ++r) {
    const i64 row = (r * 7 + 3) % nd;  // rows out of order, as in real files
    const int n = static_cast<int>(row % 5);  // 0..4 links
    for (int j = 0; j < n; ++j) l.add(row, (row * 13 + j * 29 + 5) % ns, 0.1 + 0.37 * j + 0.001 * static_cast<double>(row));
  }
  return l;
}

// Rank 0 writes the links as a SCRIP file.
inline void write_synthetic_weights(const std::string& path, i64 ns, i64 nd, MPI_Comm comm = MPI_COMM_WORLD) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) estuary::write_weights(path, synthetic_links(ns, nd), ns, nd, MPI_COMM_SELF);
  MPI_Barrier(comm);
}

// dst = W src over global arrays, each row summed in link order (the file's), unmapped rows 0.
inline std::vector<double> apply_serial(const estuary::Links& l, const std::vector<double>& src, i64 nd) {
  std::vector<double> dst(static_cast<std::size_t>(nd), 0.0);
  for (i64 k = 0; k < l.size(); ++k) {
    const auto kk = static_cast<std::size_t>(k);
    dst[static_cast<std::size_t>(l.row[kk])] += l.weight[kk] * src[static_cast<std::size_t>(l.col[kk])];
  }
  return dst;
}

// A model field: value of point i at time t for field number f.
inline double field_value(i64 i, double t, int f = 0) {
  return std::sin(0.1 * static_cast<double>(i) + 0.0003 * t) + 10.0 * f + 0.001 * t / 3600.0;
}

// The global field at time t.
inline std::vector<double> global_field(i64 n, double t, int f = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = field_value(i, t, f);
  return v;
}

// This rank's values of a global array at the decomposition's points.
inline std::vector<double> local_of(const std::vector<double>& global, const estuary::Decomp& d) {
  std::vector<double> v;
  for (i64 g : d.to_indices()) v.push_back(global[static_cast<std::size_t>(g)]);
  return v;
}

}  // namespace ctest_util
