// The coupler's OASIS grid writing: checks at each call, and the one collective write at enddef
// (see grid_writing.hpp for why it is shaped so).
#include "couple/grid_writing.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"
#include "estuary/grid_files.hpp"
#include "estuary/redist.hpp"

namespace estuary::detail {

using i64 = std::int64_t;

namespace {

const char* piece_name(GridPiece p) {
  switch (p) {
    case GridPiece::grid: return "write_grid";
    case GridPiece::corner: return "write_corner";
    case GridPiece::mask: return "write_mask";
    case GridPiece::area: return "write_area";
  }
  return "?";
}

// The OASIS file and variable suffixes of a piece.
const char* file_of(GridPiece p) {
  return p == GridPiece::mask ? "masks.nc" : p == GridPiece::area ? "areas.nc" : "grids.nc";
}
std::vector<std::string> suffixes_of(GridPiece p) {
  switch (p) {
    case GridPiece::grid: return {".lon", ".lat"};
    case GridPiece::corner: return {".clo", ".cla"};
    case GridPiece::mask: return {".msk"};
    case GridPiece::area: return {".srf"};
  }
  return {};
}

// One piece of one component as all ranks describe it.
struct Job {
  std::string comp, grid, form, path;  // form: "W" (whole, from one rank) or "P<partition name>"
  GridPiece piece = GridPiece::grid;
  i64 nx = 0, ny = 0;
  int nc = 0;
  std::vector<int> givers;  // world ranks that gave it
  int comp_first = 0;       // the lowest world rank giving any piece of the component
};

}  // namespace

bool GridWriting::start(const std::string&) {
  open_ = true;
  return true;  // OASIS's flag: grids are always to be written
}

void GridWriting::terminate(const std::string& where) {
  if (!open_)
    throw Error("terminate_grids_writing without start_grids_writing", where, "call start_grids_writing first");
  open_ = false;
}

void GridWriting::add(GridPieceData d, const GridWritingPartition& part, const std::string& where) {
  const std::string call = piece_name(d.piece);
  const std::string here = where + ", " + call + " of grid \"" + d.grid + "\"";
  if (!open_)
    throw Error(call + " outside start_grids_writing ... terminate_grids_writing", here,
                "call start_grids_writing first (OASIS's order)");
  // The name becomes "<grid>.lon" and dimensions x_<grid>: a dot would make OASIS's readers
  // split it elsewhere, blanks and tabs are not names.
  if (d.grid.empty() || d.grid.find_first_of(". \t\n") != std::string::npos)
    throw Error("grid name \"" + d.grid + "\" is empty or holds a dot or blanks", here);
  if (d.nx < 1 || d.ny < 1)
    throw Error("nx = " + std::to_string(d.nx) + ", ny = " + std::to_string(d.ny) + " (both must be 1 or more)", here,
                "an unstructured grid is (npts, 1)");
  if (d.piece == GridPiece::corner && d.nc < 1)
    throw Error("nc = " + std::to_string(d.nc) + " corners", here, "give 1 or more corners per cell");
  const i64 g = d.nx * d.ny;
  i64 n = g;
  if (d.partition >= 0) {
    if (!part.decomp)
      throw Error("partition id " + std::to_string(d.partition) + " is not defined here", here,
                  "give the id def_partition returned, or -1 for the whole grid");
    if (part.decomp->global_size() != g)
      throw Error("nx * ny = " + std::to_string(g) + " but partition \"" + part.name + "\" has " +
                      std::to_string(part.decomp->global_size()) + " points",
                  here, "nx and ny are the global grid's sizes");
    n = part.decomp->size();
  }
  const i64 want = n * (d.piece == GridPiece::corner ? d.nc : 1);
  const auto check = [&](const std::vector<double>& v, const char* what) {
    if (static_cast<i64>(v.size()) != want)
      throw Error(std::string(what) + " has " + std::to_string(v.size()) + " values, " +
                      (d.partition >= 0 ? "the partition's points" : std::string("nx * ny")) +
                      (d.piece == GridPiece::corner ? " * nc" : "") + " = " + std::to_string(want),
                  here,
                  d.partition >= 0 ? "give this rank's points, in the partition's local order"
                                   : "give the whole grid, or the partition id for this rank's points");
  };
  check(d.a, d.piece == GridPiece::grid ? "lon" : d.piece == GridPiece::corner ? "clo" : d.piece == GridPiece::mask ? "mask" : "area");
  if (d.piece == GridPiece::grid || d.piece == GridPiece::corner) check(d.b, d.piece == GridPiece::grid ? "lat" : "cla");
  // OASIS aborts when one grid is given with two sizes or two partitions.
  for (const GridPieceData& o : pieces_)
    if (o.grid == d.grid && o.piece != d.piece && (o.nx != d.nx || o.ny != d.ny || o.partition != d.partition))
      throw Error("grid \"" + d.grid + "\" was given as " + std::to_string(o.nx) + " x " + std::to_string(o.ny) +
                      (o.partition >= 0 ? " on partition id " + std::to_string(o.partition) : " whole") + " by " +
                      piece_name(o.piece) + ", now as " + std::to_string(d.nx) + " x " + std::to_string(d.ny) +
                      (d.partition >= 0 ? " on partition id " + std::to_string(d.partition) : " whole"),
                  here, "give every piece of a grid with the same nx, ny and partition");
  for (GridPieceData& o : pieces_)
    if (o.grid == d.grid && o.piece == d.piece) {
      o = std::move(d);
      return;
    }
  pieces_.push_back(std::move(d));
}

std::vector<std::string> GridWriting::write_files(const std::string& comp, const std::string& directory, MPI_Comm world,
                                                  const std::function<GridWritingPartition(int)>& partition) {
  int wrank = 0, wsize = 1;
  MPI_Comm_rank(world, &wrank);
  MPI_Comm_size(world, &wsize);
  const std::string where = "enddef, component " + comp + ", grid files";
  agree(world, [&] {
    if (open_ && !pieces_.empty())
      throw Error("grids were given (write_grid ...) but terminate_grids_writing was not called", where,
                  "call terminate_grids_writing before enddef");
  });

  // 1. Every rank's pieces, described on one line each.
  std::ostringstream mine;
  const std::filesystem::path dir = std::filesystem::weakly_canonical(
      std::filesystem::absolute(directory.empty() ? std::filesystem::path(".") : std::filesystem::path(directory)));
  for (const GridPieceData& d : pieces_) {
    const std::string form = d.partition < 0 ? "W" : "P" + partition(d.partition).name;
    mine << comp << '\t' << d.grid << '\t' << static_cast<int>(d.piece) << '\t' << d.nx << '\t' << d.ny << '\t' << d.nc
         << '\t' << form << '\t' << (dir / file_of(d.piece)).string() << '\n';
  }
  const std::vector<std::string> all = detail::allgather_strings(mine.str(), world);
  if (std::all_of(all.begin(), all.end(), [](const std::string& s) { return s.empty(); })) return {};

  // 2. The jobs: one per (component, grid, piece), with every rank that gave it.
  std::map<std::tuple<std::string, std::string, int>, Job> jobs;
  std::vector<std::string> faults;
  std::map<std::string, int> comp_first;
  for (int r = 0; r < wsize; ++r) {
    std::istringstream in(all[static_cast<std::size_t>(r)]);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      Job j;
      std::string piece, nx, ny, nc;
      std::getline(ls, j.comp, '\t');
      std::getline(ls, j.grid, '\t');
      std::getline(ls, piece, '\t');
      std::getline(ls, nx, '\t');
      std::getline(ls, ny, '\t');
      std::getline(ls, nc, '\t');
      std::getline(ls, j.form, '\t');
      std::getline(ls, j.path);
      j.piece = static_cast<GridPiece>(std::stoi(piece));
      j.nx = std::stoll(nx);
      j.ny = std::stoll(ny);
      j.nc = std::stoi(nc);
      auto [it, fresh] = jobs.try_emplace({j.comp, j.grid, static_cast<int>(j.piece)}, j);
      Job& k = it->second;
      if (!fresh && (k.nx != j.nx || k.ny != j.ny || k.nc != j.nc || k.form != j.form || k.path != j.path) &&
          faults.size() < 8)
        faults.push_back("component " + j.comp + " gives grid " + j.grid + " (" + piece_name(j.piece) + ") as " +
                         std::to_string(k.nx) + " x " + std::to_string(k.ny) +
                         (k.form == "W" ? " whole" : " on partition " + k.form.substr(1)) + " in " + k.path +
                         " on world rank " + std::to_string(k.givers.front()) + " but as " + std::to_string(j.nx) +
                         " x " + std::to_string(j.ny) + (j.form == "W" ? " whole" : " on partition " + j.form.substr(1)) +
                         " in " + j.path + " on world rank " + std::to_string(r));
      k.givers.push_back(r);
      auto [ct, cfresh] = comp_first.try_emplace(j.comp, r);
      if (!cfresh) ct->second = std::min(ct->second, r);
    }
  }
  // One grid name, one shape per folder: the files share x_<grid> and y_<grid>.
  std::map<std::pair<std::string, std::string>, const Job*> shapes;
  for (auto& [key, j] : jobs) {
    j.comp_first = comp_first[j.comp];
    const std::string folder = std::filesystem::path(j.path).parent_path().string();
    auto [it, fresh] = shapes.try_emplace({folder, j.grid}, &j);
    const Job& o = *it->second;
    if (!fresh && (o.nx != j.nx || o.ny != j.ny) && faults.size() < 8)
      faults.push_back("grid " + j.grid + " is " + std::to_string(o.nx) + " x " + std::to_string(o.ny) +
                       " in component " + o.comp + " and " + std::to_string(j.nx) + " x " + std::to_string(j.ny) +
                       " in component " + j.comp + " (folder " + folder + ")");
    if (!fresh && j.piece == GridPiece::corner && o.piece == GridPiece::corner && o.nc != j.nc && faults.size() < 8)
      faults.push_back("grid " + j.grid + " has " + std::to_string(o.nc) + " corners in component " + o.comp + " and " +
                       std::to_string(j.nc) + " in component " + j.comp);
  }
  agree(world, [&] {
    if (faults.empty()) return;
    std::string text;
    for (const std::string& f : faults) text += (text.empty() ? "" : "; ") + f;
    throw Error(text, where, "give each grid with one shape, on one partition, in one run folder");
  });

  // 3. The order of writing: the components by their first world rank (OASIS: by component
  // number), then grid and piece. The first component to give a variable writes it.
  std::vector<Job*> order;
  for (auto& [key, j] : jobs) order.push_back(&j);
  std::sort(order.begin(), order.end(), [](const Job* x, const Job* y) {
    return std::tie(x->comp_first, x->comp, x->grid, x->piece) < std::tie(y->comp_first, y->comp, y->grid, y->piece);
  });
  // One writer rank per file, spread over the world.
  std::set<std::string> path_set;
  for (const Job* j : order) path_set.insert(j->path);
  const std::vector<std::string> paths(path_set.begin(), path_set.end());
  std::map<std::string, int> writer;
  for (std::size_t k = 0; k < paths.size(); ++k)
    writer[paths[k]] = static_cast<int>(static_cast<i64>(k) * wsize / static_cast<i64>(paths.size()));

  // 4. What each variable needs: 0 write, 1 already in the file, 2 given first by another
  // component (first_comp names it). Only the writer looks into its file.
  struct Var {
    Job* job;
    std::string suffix;
    int state = 0;
    std::string first_comp;
  };
  std::vector<Var> vars;
  std::map<std::pair<std::string, std::string>, std::string> claimed;  // (path, var) -> component
  for (Job* j : order)
    for (const std::string& s : suffixes_of(j->piece)) {
      Var v{j, s, 0, ""};
      auto [it, fresh] = claimed.try_emplace({j->path, j->grid + s}, j->comp);
      if (!fresh) {
        v.state = 2;
        v.first_comp = it->second;
      }
      vars.push_back(v);
    }
  std::vector<int> state(vars.size(), 0);
  agree(world, [&] {
    for (std::size_t k = 0; k < vars.size(); ++k) {
      Var& v = vars[k];
      if (v.state == 0 && writer[v.job->path] == wrank && oasis_grid_var_exists(v.job->path, v.job->grid + v.suffix))
        state[k] = 1;
    }
  });
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, state.data(), static_cast<int>(state.size()), MPI_INT, MPI_MAX, world),
            "MPI_Allreduce");
  for (std::size_t k = 0; k < vars.size(); ++k)
    if (vars[k].state == 0) vars[k].state = state[k];

  // 5. Each job with something to write: gathered onto its file's writer, written there.
  std::string failure;  // the writer's first error; every rank goes on with the collectives
  const double nan = std::numeric_limits<double>::quiet_NaN();
  static const double none = 0.0;
  static double sink = 0.0;
  for (Job* j : order) {
    std::vector<const Var*> todo;
    for (const Var& v : vars)
      if (v.job == j && v.state == 0) todo.push_back(&v);
    if (todo.empty()) continue;
    const i64 g = j->nx * j->ny;
    const int w = writer[j->path];
    const bool whole_form = j->form == "W";
    const int source = whole_form ? *std::min_element(j->givers.begin(), j->givers.end()) : -1;
    const bool gives = whole_form ? wrank == source
                                  : std::find(j->givers.begin(), j->givers.end(), wrank) != j->givers.end();
    const GridPieceData* d = nullptr;
    if (gives && j->comp == comp)
      for (const GridPieceData& p : pieces_)
        if (p.grid == j->grid && p.piece == j->piece) d = &p;
    Decomp src = Decomp::empty(g);
    if (d) src = whole_form ? Decomp::stripes(g, {{0, g, 1}}) : *partition(d->partition).decomp;
    const Decomp dst = wrank == w ? Decomp::stripes(g, {{0, g, 1}}) : Decomp::empty(g);
    RedistOptions ro;
    ro.plan.missing = MissingPolicy::fill;  // points no rank gave arrive as NaN in the coverage
    ro.plan.fill_value = nan;
    ro.plan.duplicate = DuplicatePolicy::lowest_rank;  // halos: the lowest rank's copy
    Redist gather(src, dst, world, ro);
    const i64 ns = src.size(), nd = dst.size();
    const int per = j->piece == GridPiece::corner ? j->nc : 1;
    // The fields: coverage (ones), then per variable its `per` slices.
    std::vector<double> ones(static_cast<std::size_t>(ns), 1.0);
    std::vector<std::vector<double>> got(1 + todo.size() * static_cast<std::size_t>(per),
                                         std::vector<double>(static_cast<std::size_t>(nd)));
    std::vector<Field> fields;
    const auto field = [&](const double* from, std::vector<double>& to) {
      fields.emplace_back(Type::f64, ns > 0 ? from : &none, ns, nd > 0 ? to.data() : &sink, nd);
    };
    field(ones.data(), got[0]);
    std::size_t at = 1;
    for (const Var* v : todo) {
      const bool second = v->suffix == ".lat" || v->suffix == ".cla";
      const double* base = d ? (second ? d->b.data() : d->a.data()) : &none;
      for (int c = 0; c < per; ++c) field(d ? base + static_cast<i64>(c) * ns : &none, got[at++]);
    }
    gather.run(fields);
    if (wrank != w || !failure.empty()) continue;
    try {
      for (i64 k = 0; k < g; ++k)
        if (std::isnan(got[0][static_cast<std::size_t>(k)]))
          throw Error("point " + std::to_string(k) + " (i = " + std::to_string(k % j->nx + 1) + ", j = " +
                          std::to_string(k / j->nx + 1) + ") of grid " + j->grid + " was given by no rank of component " +
                          j->comp + " (" + piece_name(j->piece) + " on partition " + j->form.substr(1) + ")",
                      where, "every rank holding points of the partition calls " + std::string(piece_name(j->piece)) +
                                 " with its points");
      at = 1;
      for (const Var* v : todo) {
        std::vector<double> values;
        values.reserve(static_cast<std::size_t>(g * per));
        for (int c = 0; c < per; ++c, ++at) values.insert(values.end(), got[at].begin(), got[at].end());
        write_oasis_grid_var(j->path, j->grid, v->suffix, j->nx, j->ny, j->piece == GridPiece::corner ? j->nc : 0, values);
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // Also the barrier after which every file is complete and closed for the readers.
  agree(world, [&] {
    if (!failure.empty()) throw Error(failure.rfind("estuary: ", 0) == 0 ? failure.substr(9) : failure, where);
  });

  // 6. What this component's log says.
  std::vector<std::string> lines;
  for (const Var& v : vars) {
    if (v.job->comp != comp) continue;
    const std::string name = v.job->grid + v.suffix, file = v.job->path;
    const std::string from = v.job->form == "W" ? "from world rank " + std::to_string(v.job->givers.front())
                                                : "gathered from the " + std::to_string(v.job->givers.size()) +
                                                      " rank(s) of partition " + v.job->form.substr(1);
    if (v.state == 0) lines.push_back("grid file " + file + ": " + name + " written (" + from + ")");
    else if (v.state == 1)
      lines.push_back("grid file " + file + ": " + name + " is in the file already: not rewritten (as in OASIS)");
    else
      lines.push_back("grid file " + file + ": " + name + " also given by component " + v.first_comp +
                      ", which wrote it: not rewritten");
  }
  return lines;
}

}  // namespace estuary::detail
