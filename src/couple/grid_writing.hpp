// The coupler's OASIS grid writing (Component::start_grids_writing ... terminate_grids_writing):
// what each rank gave, kept until enddef, where every component's pieces are written together.
//
// Why at enddef and over the world: OASIS3-MCT writes grids.nc, masks.nc and areas.nc at
// oasis_enddef, one component after the other (a world barrier between them), because the
// components share the files. Here the enddef of every component is one collective step over
// the coupler's world instead: every rank learns every piece of every component (a small
// allgather of descriptions), each file gets exactly one writer rank, the data of each piece
// is gathered onto that rank with a Redist (from the one rank that gave the whole grid, or from
// every rank of its partition), and the writer adds a variable only when the file lacks it (a
// grid written twice, by a previous run or by another component, is not rewritten, as in
// OASIS). No two processes ever open one file for writing at the same time, so concurrent
// components are safe without file locks, and the files are closed before any rank reads them
// (the step ends with an agreement over the world, after the last write).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"

namespace estuary::detail {

enum class GridPiece { grid = 0, corner = 1, mask = 2, area = 3 };

// The data of one grid-writing call on this rank.
struct GridPieceData {
  std::string grid;
  GridPiece piece = GridPiece::grid;
  std::int64_t nx = 0, ny = 0;
  int nc = 0;                // corners (GridPiece::corner only)
  int partition = -1;        // -1: the whole grid, given by this rank (OASIS's classic call)
  // grid: lon, lat; corner: clo, cla, point fastest and corner slowest (a Fortran (nx, ny, nc)
  // or (npts, nc) array); mask: OASIS's values (1 = masked); area: as given.
  std::vector<double> a, b;
};

// A partition of the component as the writing needs it: its name (which matches it across
// ranks) and this rank's points.
struct GridWritingPartition {
  std::string name;
  const Decomp* decomp = nullptr;
};

class GridWriting {
 public:
  // Local. OASIS's start/terminate bracket: writes are taken between them; several brackets
  // are allowed (the pieces add up).
  bool start(const std::string& where);
  void terminate(const std::string& where);
  // Local: checks the sizes against nx * ny (whole) or the partition (decomposed) and keeps a
  // copy; a second call for the same grid and piece replaces the first, as in OASIS.
  void add(GridPieceData d, const GridWritingPartition& part, const std::string& where);
  bool any() const { return !pieces_.empty(); }

  // Collective over world (every rank of the coupled run, every component): writes the pieces
  // of all components into <directory>/grids.nc, masks.nc, areas.nc. Returns the log lines of
  // this component (what was written, what was already there). Errors are agreed over world.
  std::vector<std::string> write_files(const std::string& comp, const std::string& directory, MPI_Comm world,
                                       const std::function<GridWritingPartition(int)>& partition);

 private:
  bool open_ = false;
  std::vector<GridPieceData> pieces_;
};

}  // namespace estuary::detail
