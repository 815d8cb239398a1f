// Output on another grid (FileConfig::grid, XIOS's interpolate_domain; docs/io.md): the target
// grids, the weights and the Remaps of the files that ask for one, and the remapped copies of
// their fields.
//
// How it joins the rest of Output: for every file with a grid, each of its fields f is written
// from a remapped field "f@<grid text>" (regridded_name) instead, a FieldInfo on a GridInfo of
// the target, both added on the model ranks before the catalog, so that the axes, masks,
// variables, transfers and files treat them as any model field on any grid (the servers learn
// of them through the catalog). The file configurations name the remapped fields
// (rename_fields, on every rank alike). A write of f then remaps the sample and writes the
// remapped values as the remapped field (XIOS's order: interpolate, then the operation).
//
// Where: on the model ranks, where the data is. The Remap moves the source values to a block
// decomposition of the target grid over the model ranks, the rows are summed there (bfb: the
// same bits on any rank count), and the remapped field then travels to the writers like any
// other; the writers (dedicated servers, or the model's own) do no arithmetic.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/io.hpp"

namespace estuary::detail::config {
class YamlFile;
}
namespace YAML {
class Node;
}

namespace estuary::io {

struct GridInfo;   // io/output_impl.hpp
struct FieldInfo;

// A file's `grid:` in YAML (docs/configuration.md): errors name the file, line and key.
RegridConfig parse_regrid(const estuary::detail::config::YamlFile& doc, const YAML::Node& n, const std::string& key);

// The name of field `field` remapped as `g` asks.
std::string regridded_name(const std::string& field, const RegridConfig& g);

// Every rank, in the Output's constructor: the fields of files with a grid name their remapped
// copies (output_name keeps the variable's name). Throws Error at a field's origin for what is
// not supported there (a derived field).
void rename_fields(OutputConfig& c);

class Regrids {
 public:
  Regrids();
  ~Regrids();
  Regrids(const Regrids&) = delete;
  Regrids& operator=(const Regrids&) = delete;

  // Model ranks, collective over comm, at end_def before the axes and the catalog: builds the
  // target grids (appended to `grids`), the weights (generated in parallel or read from their
  // cache) and the Remaps, and appends the remapped fields to `fields`. Errors are every model
  // rank's (agreed). `log` gets a line per weight set (generated, reused or read).
  void define(const OutputConfig& cfg, std::vector<GridInfo>& grids, std::vector<FieldInfo>& fields, MPI_Comm comm,
              const std::function<void(const std::string&)>& log);
  // Model ranks, collective over comm: field f was written with `data`. Remaps it for every
  // file grid it goes to whose remapped field `wanted` (the same answer on every model rank)
  // and hands the values to `put` (remapped field index, values). `put` returns true to stop
  // (SIGTERM); so does this then.
  bool written(int f, std::span<const double> data, const std::function<bool(int)>& wanted,
               const std::function<bool(int, std::span<const double>)>& put);
  bool empty() const;
  double seconds() const;  // this rank's time in the remaps of written()

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary::io
