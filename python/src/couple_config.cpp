// A coupling configuration (namcouple or YAML; estuary/couple_config.hpp) read into Python dicts.
#include "estuary/couple_config.hpp"
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <optional>
#include <string>
#include "estuary/couple.hpp"

#include "bindings.hpp"

namespace estuary::py {

void bind_couple_config(nb::module_& m) {
  m.def(
      "read_coupling_config",
      [](const std::string& path) {
        const estuary::CouplingSetup setup = estuary::read_coupling_config(path);
        const auto grid = [](const estuary::GridRef& g) {
          nb::dict d;
          d["name"] = g.name;
          d["nx"] = g.nx;
          d["ny"] = g.ny;
          d["periodicity"] = g.periodicity == estuary::Periodicity::periodic ? "P" : "R";
          d["overlap"] = g.overlap;
          return d;
        };
        const auto blas = [](const std::optional<estuary::BlasSpec>& b) -> nb::object {
          if (!b) return nb::none();
          nb::dict d;
          d["scale"] = b->scale;
          d["add"] = b->add;
          return d;
        };
        nb::list couplings;
        for (const estuary::CouplingConfig& c : setup.couplings) {
          nb::dict d;
          d["line"] = c.line();
          d["src_fields"] = c.src_fields;
          d["dst_fields"] = c.dst_fields;
          d["period"] = c.period;
          d["lag"] = c.lag;
          d["seq"] = c.seq;
          d["status"] = std::string(estuary::name_of(c.status));
          d["restart_file"] = c.restart_file;
          d["input_file"] = c.input_file;
          d["src_grid"] = grid(c.src_grid);
          d["dst_grid"] = grid(c.dst_grid);
          d["src_component"] = c.src_component;
          d["dst_component"] = c.dst_component;
          d["origin"] = c.origin;
          d["transforms"] = c.transforms;
          d["loctrans"] = c.loctrans ? nb::object(nb::str(estuary::name_of(*c.loctrans))) : nb::none();
          if (c.mapping) {
            nb::dict mp;
            mp["file"] = c.mapping->file;
            mp["location"] = estuary::name_of(c.mapping->location);
            mp["order"] = estuary::name_of(c.mapping->order);
            d["mapping"] = mp;
          } else {
            d["mapping"] = nb::none();
          }
          if (c.scripr) {
            const estuary::ScriprSpec& s = *c.scripr;
            nb::dict sc;
            sc["method"] = s.method;
            sc["nearest_fill"] = s.nearest_fill;
            sc["grid_type"] = s.grid_type;
            sc["field_type"] = s.field_type;
            sc["restriction"] = s.restriction;
            sc["bins"] = s.bins;
            sc["neighbors"] = s.takes_neighbors() ? s.neighbors : 0;
            sc["variance"] = s.variance;
            sc["normalization"] = s.normalization;
            sc["order"] = s.order;
            d["scripr"] = sc;
          } else {
            d["scripr"] = nb::none();
          }
          nb::list stages;
          for (const estuary::StageSpec& st : c.interpolation) {
            nb::dict sd, params;
            for (const auto& [k, v] : st.params) params[k.c_str()] = v;
            sd["name"] = st.name;
            sd["params"] = params;
            stages.append(sd);
          }
          d["interpolation"] = stages;
          if (c.conserv) {
            nb::dict cs;
            cs["mode"] = std::string(estuary::name_of(c.conserv->mode));
            cs["method"] = std::string(estuary::name_of(c.conserv->method));
            d["conserv"] = cs;
          } else {
            d["conserv"] = nb::none();
          }
          d["blasold"] = blas(c.blasold);
          d["blasnew"] = blas(c.blasnew);
          d["checkin"] = c.checkin;
          d["checkout"] = c.checkout;
          couplings.append(d);
        }
        nb::dict out;
        out["path"] = setup.path;
        out["runtime"] = setup.runtime;
        out["nfields"] = setup.nfields < 0 ? nb::object(nb::none()) : nb::object(nb::int_(setup.nfields));
        out["log_level"] = setup.log_level;
        out["timeline"] =
            setup.timeline;  // timeline: the coupling timeline switch (as read; ESTUARY_TIMELINE applies at enddef)
        out["notes"] = setup.notes;
        out["couplings"] = couplings;
        return PyDict(std::move(out));
      },
      "path"_a,
      "Local: reads the coupling configuration (namcouple or YAML) at `path` into a dict: path, runtime, nfields "
      "(namcouple), "
      "log_level, timeline (the coupling timeline switch), notes (what was skipped or read differently, for the log) "
      "and couplings, each "
      "with line, fields, period, lag, seq, status, restart/input file, grids {name, nx, ny, "
      "periodicity, overlap}, transforms and their settings (loctrans, mapping, scripr, conserv, "
      "blasold, blasnew, checkin, checkout). Raises estuary.Error naming the file and line.");
}

}  // namespace estuary::py
