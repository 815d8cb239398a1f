// Component: one coupling's set-up at enddef (its ranks, communicators, mapping, corrections
// and buffers), and the mapping: a weight file, weights generated here or by a registered
// function, or the identity; couplings of one weight file share one Remap.
#include "couple/component_impl.hpp"

#include <filesystem>

namespace estuary {

void Component::Impl::build(const CouplingConfig& cfg, std::map<std::pair<std::string, int>, VarInfo>& table) {
  auto c = std::make_unique<Coupling>();
  c->cfg = &cfg;
  c->setup = &setup;
  c->directory = opt.directory;
  c->timeout = setup.timeout;
  c->log_path = log_path;
  c->label = detail::join(cfg.src_fields) + " -> " + detail::join(cfg.dst_fields) + " (" + cfg.origin + ")";
  const bool has_src = cfg.status != FieldStatus::input, has_dst = cfg.status != FieldStatus::output;
  const VarInfo* s = has_src ? &table.at({cfg.src_fields[0], 1}) : nullptr;
  const VarInfo* d = has_dst ? &table.at({cfg.dst_fields[0], 0}) : nullptr;
  c->src_comp = s ? s->comp : "";
  c->dst_comp = d ? d->comp : "";
  c->src_global = s ? s->global : 0;
  c->dst_global = d ? d->global : 0;
  for (const std::string& f : has_src ? cfg.src_fields : cfg.dst_fields)
    c->bundle.push_back(table.at({f, has_src ? 1 : 0}).bundle);
  for (int b : c->bundle) c->nvalues += b;
  std::vector<int> members;
  if (s) members.insert(members.end(), s->ranks.begin(), s->ranks.end());
  if (d) members.insert(members.end(), d->ranks.begin(), d->ranks.end());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const bool member = std::binary_search(members.begin(), members.end(), wrank);
  check_mpi(MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, wrank, &c->comm), "MPI_Comm_split");
  if (!member) {
    couplings.push_back(std::move(c));
    return;
  }
  const auto pos = [&](int r) { return static_cast<int>(std::lower_bound(members.begin(), members.end(), r) - members.begin()); };
  c->is_src = s && std::binary_search(s->ranks.begin(), s->ranks.end(), wrank);
  c->is_dst = d && std::binary_search(d->ranks.begin(), d->ranks.end(), wrank);
  if (s) c->src_root = pos(s->ranks.front());
  if (d) {
    c->dst_root = pos(d->ranks.front());
    for (int r : d->ranks) c->dst_ranks.push_back(pos(r));
  }
  check_mpi(MPI_Comm_split(c->comm, c->is_src ? 0 : MPI_UNDEFINED, wrank, &c->src_comm), "MPI_Comm_split");
  check_mpi(MPI_Comm_split(c->comm, c->is_dst ? 0 : MPI_UNDEFINED, wrank, &c->dst_comm), "MPI_Comm_split");
  // This rank's variables and partitions on each side.
  int src_part = -1, dst_part = -1;
  const std::size_t nf = has_src ? cfg.src_fields.size() : cfg.dst_fields.size();
  c->src_var.assign(nf, -1);
  c->dst_var.assign(nf, -1);
  for (std::size_t k = 0; k < nf; ++k)
    for (std::size_t v = 0; v < vars.size(); ++v) {
      Var& var = vars[v];
      if (c->is_src && var.dir == Direction::out && var.name == cfg.src_fields[k]) {
        c->src_var[k] = static_cast<int>(v);
        src_part = var.part;
        var.uses.emplace_back(c.get(), static_cast<int>(k));
      }
      if (c->is_dst && var.dir == Direction::in && var.name == cfg.dst_fields[k]) {
        c->dst_var[k] = static_cast<int>(v);
        dst_part = var.part;
        var.uses.emplace_back(c.get(), static_cast<int>(k));
      }
    }
  c->src_decomp = src_part >= 0 ? parts[static_cast<std::size_t>(src_part)].decomp : Decomp::empty(c->src_global);
  c->dst_decomp = dst_part >= 0 ? parts[static_cast<std::size_t>(dst_part)].decomp : Decomp::empty(c->dst_global);
  c->n_src = c->src_decomp.size();
  c->n_dst = c->dst_decomp.size();
  c->src_dims = {cfg.src_grid.nx, cfg.src_grid.ny};
  c->dst_dims = {cfg.dst_grid.nx, cfg.dst_grid.ny};
  const auto nv = static_cast<std::size_t>(c->nvalues);
  if (cfg.loctrans.value_or(LocTrans::instant) != LocTrans::instant) c->acc.assign(nv * static_cast<std::size_t>(c->n_src), 0.0);
  c->acc_count.assign(nf, 0);
  c->ready.assign(nf, 0);
  c->delivered.assign(nf, 0);
  c->last_put.assign(nf, -1e300);
  c->last_get.assign(nf, -1e300);
  c->src_timers.field = c->label + ", source side";
  c->dst_timers.field = c->label + ", target side";
  const std::string here = "enddef, " + c->label;
  detail::agree(c->comm, [&] {
    if (cfg.src_grid.nx > 0 && cfg.src_grid.ny > 0 && has_src && cfg.src_grid.nx * cfg.src_grid.ny != c->src_global)
      throw Error("the configuration gives the source grid " + cfg.src_grid.name + " " + std::to_string(cfg.src_grid.nx) +
                      " x " + std::to_string(cfg.src_grid.ny) + " points, the partition of " + cfg.src_fields[0] + " has " +
                      std::to_string(c->src_global),
                  here);
    if (cfg.dst_grid.nx > 0 && cfg.dst_grid.ny > 0 && has_dst && cfg.dst_grid.nx * cfg.dst_grid.ny != c->dst_global)
      throw Error("the configuration gives the target grid " + cfg.dst_grid.name + " " + std::to_string(cfg.dst_grid.nx) +
                      " x " + std::to_string(cfg.dst_grid.ny) + " points, the partition of " + cfg.dst_fields[0] + " has " +
                      std::to_string(c->dst_global),
                  here);
  });
  if (has_src && has_dst) setup_mapping(*c, cfg, src_part, dst_part);
  if (c->is_dst && (cfg.status == FieldStatus::expout || cfg.status == FieldStatus::input))
    c->rbuf.assign(nv * static_cast<std::size_t>(c->n_dst), 0.0);
  log("coupling " + c->label + ": " + (c->src_comp.empty() ? "file" : c->src_comp) + " -> " +
      (c->dst_comp.empty() ? "file" : c->dst_comp) + ", period " + detail::time_str(cfg.period) + " s, lag " +
      detail::time_str(cfg.lag) + " s, " + name_of(cfg.status));
  couplings.push_back(std::move(c));
}

namespace {
// The source decomposition of the stacked source [x, g1, ...]: the rank's points in each of
// the `ncols` blocks, block after block (the layout of the Coupling's stacked buffer).
Decomp stacked_decomp(const Decomp& src, int ncols) {
  const i64 n = src.global_size();
  const std::vector<i64> own = src.to_indices();
  std::vector<i64> idx;
  idx.reserve(own.size() * static_cast<std::size_t>(ncols));
  for (int col = 0; col < ncols; ++col)
    for (i64 g : own) idx.push_back(col * n + g);
  return Decomp::indices(ncols * n, std::move(idx));
}
}  // namespace

Links Component::Impl::callback_links(Coupling& c, const CouplingConfig& cfg, const Grid& sg, const Grid& dg,
                                      const std::string& here) {
  const std::vector<i64> mine = c.is_src ? c.src_decomp.to_indices() : std::vector<i64>{};
  std::vector<std::int32_t> mask_mine(mine.size(), 1);
  for (std::size_t i = 0; i < mine.size() && !sg.mask.empty(); ++i) mask_mine[i] = sg.mask[i];
  const std::vector<i64> idx = allgather_all(mine, MPI_INT64_T, c.comm);
  const std::vector<double> lon_all = allgather_all(c.is_src ? sg.lon : std::vector<double>{}, MPI_DOUBLE, c.comm);
  const std::vector<double> lat_all = allgather_all(c.is_src ? sg.lat : std::vector<double>{}, MPI_DOUBLE, c.comm);
  const std::vector<std::int32_t> mask_all = allgather_all(mask_mine, MPI_INT32_T, c.comm);
  const auto n = static_cast<std::size_t>(c.src_global);
  std::vector<double> lon(n, 0.0), lat(n, 0.0);
  std::vector<std::int32_t> mask(n, 1);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto g = static_cast<std::size_t>(idx[k]);
    lon[g] = lon_all[k], lat[g] = lat_all[k], mask[g] = mask_all[k];
  }
  const std::string& fn = cfg.scripr->callback;
  Links out;
  std::string fault, fix;
  if (c.is_dst) {
    const auto it = weight_functions.find(fn);
    const std::vector<i64> dst_idx = c.dst_decomp.to_indices();
    if (it == weight_functions.end()) {
      fault = "no weight function \"" + fn + "\" is registered on this rank of " + c.dst_comp;
      fix = "call register_weights(\"" + fn + "\", f) on every rank of the target component before enddef";
    } else {
      WeightQuery q{c.label, lon, lat, mask, dst_idx, dg.lon, dg.lat};
      try {
        out = it->second(q);
      } catch (const std::exception& e) {
        fault = "the weight function \"" + fn + "\" failed: " + e.what();
      }
      std::vector<i64> own = dst_idx;
      std::sort(own.begin(), own.end());
      const std::size_t m = out.row.size();
      if (fault.empty() && (out.col.size() != m || out.weight.size() != m))
        fault = "the weight function \"" + fn + "\" returned " + std::to_string(m) + " targets, " +
                std::to_string(out.col.size()) + " sources and " + std::to_string(out.weight.size()) + " weights";
      for (std::size_t k = 0; k < m && fault.empty(); ++k) {
        const i64 col = out.col[k], row = out.row[k];
        if (col < 0 || col >= c.src_global)
          fault = "the weight function \"" + fn + "\" returned link " + std::to_string(k) + " to source index " +
                  std::to_string(col) + ", outside [0, " + std::to_string(c.src_global) + ")";
        else if (!std::binary_search(own.begin(), own.end(), row))
          fault = "the weight function \"" + fn + "\" returned link " + std::to_string(k) + " to target index " +
                  std::to_string(row) + ", which this rank does not hold";
        if (!fault.empty()) fix = "return links (global target index, global source index, weight) for the rank's own targets";
      }
    }
    if (!fault.empty()) fault += " (" + detail::world_rank_label() + ")";
  }
  detail::agree(c.comm, [&] {
    if (!fault.empty()) throw Error("SCRIPR CALLBACK: " + fault, here, fix);
  });
  log("coupling " + c.label + ": weights from the registered function \"" + fn + "\"");
  return out;
}

// The mapping of a coupling: a weight file, weights generated here, or the identity.
// Issue 24: couplings with one weight file, the same partitions on every rank, the same ranks
// and the same options share one Remap (its weights, plans and schedules) instead of setting up
// one each. Collective over c.comm: every rank names the first earlier coupling it could share
// with (couplings are in the same order everywhere), and they share only when all name the same.
const Coupling* Component::Impl::shared_remap(const Coupling& c) const {
  int mine = INT_MAX;  // ESTUARY_SHARE_REMAPS=0 (for measurements): no sharing, still collective
  for (std::size_t k = 0; Settings::get().share_remaps && k < couplings.size() && mine == INT_MAX; ++k) {
    const Coupling& o = *couplings[k];
    if (!o.remap || o.remap_key != c.remap_key || !o.remap_shared_from.empty() || o.comm == MPI_COMM_NULL) continue;
    int same = MPI_UNEQUAL;
    check_mpi(MPI_Comm_compare(o.comm, c.comm, &same), "MPI_Comm_compare");
    if (same == MPI_CONGRUENT) mine = static_cast<int>(k);
  }
  int lo = mine, hi = mine;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, c.comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
  return lo == hi && lo != INT_MAX ? couplings[static_cast<std::size_t>(lo)].get() : nullptr;
}

void Component::Impl::setup_mapping(Coupling& c, const CouplingConfig& cfg, int src_part, int dst_part) {
  RemapOptions ro;
  // The transfer between the components is split-phase (one P2P stage); the exchange within a
  // component may be staged (CouplingSetup::schedule).
  ro.split_phase = true;
  ro.algorithm = setup.schedule;
  if (cfg.mapping) {
    ro.location = cfg.mapping->location;
    ro.order = cfg.mapping->order;
  }
  const std::string here = "enddef, " + c.label;
  // The grids named by the configuration, where this rank holds them (else empty of the right size).
  const auto side_grid = [&](bool source) {
    const GridRef& ref = source ? cfg.src_grid : cfg.dst_grid;
    const int part = source ? src_part : dst_part;
    const i64 global = source ? c.src_global : c.dst_global;
    const bool holds = source ? c.is_src : c.is_dst;
    const GridDef* g = holds ? grid(ref.name, part) : nullptr;
    int missing = holds && !g ? 1 : 0;
    // ---- OASIS grid files: a grid that no rank gave with def_grid is read from grids.nc,
    // masks.nc and areas.nc in the run folder, as OASIS3-MCT reads them for SCRIPR and CONSERV
    // (masks always, corners for SCRIPR CONSERV, areas for CONSERV).
    int given = g ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &given, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
    if (!given) {
      GridFileNeeds needs;
      needs.mask = true;
      needs.corners = detail::weights_need_corners(cfg);
      needs.area = static_cast<bool>(cfg.conserv) || (cfg.scripr && detail::runoff_options(*cfg.scripr));
      needs.context = here + ", " + (source ? "source" : "target") + " grid";
      const OasisGridFiles files = OasisGridFiles::in(opt.directory);
      Grid out = read_oasis_grid(files, ref.name, holds ? parts[static_cast<std::size_t>(part)].decomp : Decomp::empty(global),
                                 c.comm, needs);
      out.global_size = global;
      if (holds) log("coupling " + c.label + ": grid " + ref.name + " read from " + files.grids + ", " + files.masks +
                     (out.area.empty() ? "" : ", " + files.areas) + " (no def_grid)");
      return out;
    }
    // ---- end of OASIS grid files ----
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &missing, 1, MPI_INT, MPI_MAX, c.comm), "MPI_Allreduce");
    if (missing)
      throw Error("grid " + ref.name + " is not defined on the partition of " +
                      (source ? cfg.src_fields[0] : cfg.dst_fields[0]) + " on every rank holding it",
                  here, "call def_grid(\"" + ref.name + "\", partition, grid) before enddef");
    Grid out;
    if (g) out = g->grid;
    out.global_size = global;
    if (!g) {
      out.dims = ref.nx > 0 && ref.ny > 0 ? std::vector<i64>{ref.nx, ref.ny} : std::vector<i64>{global};
      out.points.clear();
    }
    return out;
  };
  Links links;
  std::string weight_file;
  // Multi-weight mappings (a num_wgts 3 or 4 file, SCRIPR BICUBIC): the columns stacked over
  // the source [x, g1, g2 (, g3)], for puts with the model's gradients (see setup_gradients).
  Links stacked;
  int ncols = 1;
  bool generate = cfg.scripr || !cfg.interpolation.empty();
  std::string generate_into;  // MAPPING with SCRIPR or STACK, and no file there yet
  if (cfg.mapping) {
    weight_file = path_in(opt.directory, cfg.mapping->file);
    if (generate) {
      // OASIS3-MCT's MAPPING with SCRIPR: the file when it is there (as it is; the grids are not
      // needed), else the SCRIPR weights, generated and written under its name for the next run.
      int there = 0, rank = 0;
      MPI_Comm_rank(c.comm, &rank);
      if (rank == 0) there = std::filesystem::exists(weight_file) ? 1 : 0;
      check_mpi(MPI_Bcast(&there, 1, MPI_INT, 0, c.comm), "MPI_Bcast");
      if (there) {
        generate = false;
        log("coupling " + c.label + ": MAPPING file " + weight_file + " is there: read as it is, " +
            (cfg.scripr ? "SCRIPR " + cfg.scripr->method : std::string("STACK")) + " not run (OASIS3-MCT's rule)");
      } else {
        generate_into = weight_file;
        weight_file.clear();
      }
    }
  }
  if (generate) {
    detail::WeightContext wc;
    wc.file = generate_into;
    wc.directory = opt.directory;
    wc.label = c.label;
    wc.here = here;
    wc.src_global = c.src_global;
    wc.dst_global = c.dst_global;
    wc.log = [this](const std::string& line) { log(line); };
    wc.callback = [&](const Grid& s, const Grid& d) { return callback_links(c, cfg, s, d, here); };
    detail::CouplingWeights w = detail::coupling_weights(cfg, side_grid(true), side_grid(false), c.comm, wc);
    links = std::move(w.links);
    weight_file = std::move(w.weight_file);
    ro.unmapped_value = w.unmapped_value;
    stacked = std::move(w.stacked);
    ncols = w.ncols;
  } else if (!cfg.mapping) {
    detail::agree(c.comm, [&] {
      if (c.src_global != c.dst_global)
        throw Error("the source has " + std::to_string(c.src_global) + " points and the target " +
                        std::to_string(c.dst_global) + " but no mapping is configured",
                    here, "add MAPPING (a weight file) or SCRIPR to the coupling");
    });
    // The identity, each point's link on one rank (a block of the points per rank).
    int r = 0, p = 1;
    MPI_Comm_rank(c.comm, &r);
    MPI_Comm_size(c.comm, &p);
    for (i64 i = r * c.src_global / p; i < (r + 1) * c.src_global / p; ++i) links.add(i, i, 1.0);
  }
  if (cfg.mapping && !weight_file.empty()) {  // a file's weights (not ones generated in memory)
    char opts[160];
    std::snprintf(opts, sizeof opts, "|%d|%d|%d|%d|%d|%d|%.17g|", src_part, dst_part, c.is_src ? 1 : 0, c.is_dst ? 1 : 0,
                  static_cast<int>(ro.location), static_cast<int>(ro.order), ro.unmapped_value);
    c.remap_key = weight_file;
    c.remap_key.append(opts).append(ro.algorithm);
    if (const Coupling* same = shared_remap(c)) {
      c.remap = std::make_unique<Remap>(same->remap->share());
      c.remap_shared_from = same->label;
      if (same->grad_remap) {
        c.ncols = same->ncols;
        c.grad_remap = std::make_unique<Remap>(same->grad_remap->share());
        c.grad_remap->prepare(c.nvalues);
      }
      log("coupling " + c.label + ": shares the remap of " + same->label + " (same weights, partitions and ranks)");
      weight_file.clear();
    }
  }
  try {
    if (c.remap) {
      // shared: nothing to read or set up
    } else if (!weight_file.empty()) {
      // Read once with the columns apart: a one-column file is the matrix itself; a
      // multi-weight one is also read folded (the Remap of puts without gradients).
      WeightReadOptions wro;
      wro.src_size = c.src_global;
      wro.dst_size = c.dst_global;
      wro.stack_columns = true;
      WeightSlice ws = read_weights(weight_file, c.comm, wro);
      if (is_largest_area_fraction(ws.info)) ro.rule = RemapRule::largest_area_fraction;  // CDO's genlaf
      // A YAC file names the grids it is for (and has no grid sizes to check): YAC refuses
      // another coupling's file, and so does estuary.
      if (ws.info.yac && (ws.info.src_grid_name != cfg.src_grid.name || ws.info.dst_grid_name != cfg.dst_grid.name))
        throw Error("the YAC weight file is for grids \"" + ws.info.src_grid_name + "\" -> \"" +
                        ws.info.dst_grid_name + "\", the coupling's are \"" + cfg.src_grid.name + "\" -> \"" +
                        cfg.dst_grid.name + "\"",
                    "file " + weight_file + ", attributes src_grid_name and dst_grid_name",
                    "give the file written for this coupling's grids (YAC checks the names too)");
      if (ws.info.num_wgts > 1)
        log("coupling " + c.label + ": " + weight_file + " has " + std::to_string(ws.info.num_wgts) +
            " weights a link; a put without gradients is remapped with CDO's gradients of the source field "
            "(OASIS3-MCT would apply the first column alone), a put with gradients with every column");
      if (ws.info.num_wgts > 1) {
        ncols = static_cast<int>(ws.info.num_wgts);
        stacked = std::move(ws.links);
      } else {
        links = std::move(ws.links);
        weight_file.clear();
      }
    }
    if (!c.remap_shared_from.empty()) {
      // shared above
    } else if (weight_file.empty()) {
      c.remap = std::make_unique<Remap>(links, c.src_decomp, c.dst_decomp, c.comm, ro);
    } else {
      c.remap = std::make_unique<Remap>(weight_file, c.src_decomp, c.dst_decomp, c.comm, ro);
    }
    if (ncols > 1 && c.remap_shared_from.empty()) {
      c.ncols = ncols;
      c.grad_remap = std::make_unique<Remap>(stacked, stacked_decomp(c.src_decomp, ncols), c.dst_decomp, c.comm, ro);
      c.grad_remap->prepare(c.nvalues);
    }
  } catch (const MpiError&) {
    throw;
  } catch (const Error& e) {
    throw Error(e.fault(), here + (e.where().empty() ? "" : ", " + e.where()), e.fix());
  }
  c.remap->prepare(c.nvalues);
  c.remap->prepare(2 * c.nvalues);  // puts with a fractional mask: f x and f in one exchange
  if (cfg.conserv) {
    Grid sg = side_grid(true), dg = side_grid(false);
    detail::agree(c.comm, [&] {
      if ((c.is_src && sg.area.empty()) || (c.is_dst && dg.area.empty()))
        throw Error("CONSERV needs the cell areas of grids " + cfg.src_grid.name + " and " + cfg.dst_grid.name, here,
                    "give Grid::area (or corners) in def_grid");
    });
    c.conserv = std::make_unique<Conserv>(ConservSide{&c.src_decomp, sg.area, sg.mask},
                                          ConservSide{&c.dst_decomp, dg.area, dg.mask}, c.comm, cfg.conserv->method);
  }
  c.sbuf.assign(static_cast<std::size_t>(c.nvalues * c.n_src), 0.0);
  c.rbuf.assign(static_cast<std::size_t>(c.nvalues * c.n_dst), 0.0);
}

}  // namespace estuary
