// The checks both configuration readers share (config_checks.hpp).
#include "couple/config_checks.hpp"

#include <cstdlib>
#include <set>

#include "estuary/settings.hpp"

namespace estuary::detail::config {

void check_scripr(ScriprSpec& s, const Fail& fail) {
  s.method = upper(s.method);
  s.grid_type = upper(s.grid_type);
  s.field_type = upper(s.field_type);
  s.restriction = upper(s.restriction);
  s.normalization = upper(s.normalization);
  s.order = upper(s.order);
  // OASIS3-MCT 5.0's "NF" variants: the method without the nearest-neighbour fill.
  for (const char* nf : {"BILINEARNF", "BICUBICNF", "DISTWGTNF", "GAUSWGTNF"})
    if (s.method == nf) {
      s.method.resize(s.method.size() - 2);
      s.nearest_fill = false;
    }
  const bool runoff = s.method == "LOCCUNIF" || s.method == "LOCCDIST" || s.method == "LOCCGAUS" || s.method == "SPMAP";
  if (s.method != "DISTWGT" && s.method != "BILINEAR" && s.method != "CONSERV" && s.method != "BICUBIC" &&
      s.method != "GAUSWGT" && s.method != "CALLBACK" && !runoff)
    fail("unknown SCRIPR method " + quoted(s.method),
         "use CONSERV, BILINEAR, BICUBIC, DISTWGT or GAUSWGT (the last four also with NF: no "
         "nearest-neighbour fill), the runoff mappings LOCCUNIF, LOCCDIST, LOCCGAUS (SPMAP in YAML), "
         "or CALLBACK (YAML) with the name of a registered weight function");
  if (s.method == "CALLBACK" && s.callback.empty())
    fail("SCRIPR CALLBACK without the name of its weight function", "give scripr: {method: callback, name: NAME}");
  const bool quads = s.method == "BILINEAR" || s.method == "BICUBIC";
  if (s.grid_type != "LR" && s.grid_type != "D" && s.grid_type != "U")
    fail("unknown SCRIPR grid type " + quoted(s.grid_type), "use LR, D or U");
  if (quads && s.grid_type == "U")
    fail("SCRIPR " + s.method + " needs a source grid of type LR or D (logically rectangular or reduced), not U",
         "use DISTWGT or CONSERV for an unstructured (U) grid");
  if (s.field_type == "VECTOR") s.field_type = "SCALAR";  // as OASIS3-MCT reads it
  if (s.field_type != "SCALAR")
    fail("unknown SCRIPR field type " + quoted(s.field_type), "use SCALAR (or VECTOR, read as SCALAR)");
  if (s.restriction != "LATLON" && s.restriction != "LATITUDE")
    fail("unknown SCRIPR search restriction " + quoted(s.restriction), "use LATLON or LATITUDE");
  if (quads && s.grid_type == "D" && s.restriction != "LATITUDE")
    fail("SCRIPR " + s.method + " on a reduced (D) grid needs the LATITUDE search restriction",
         "write LATITUDE (as OASIS3-MCT requires)");
  if (s.bins < 0) fail("SCRIPR's search bin count must not be negative", "give e.g. 1");
  if (s.neighbors < 1) fail("SCRIPR " + s.method + " needs at least 1 neighbour", "give e.g. 4");
  if (s.method == "CONSERV") {
    static const std::set<std::string> norms{"FRACAREA", "DESTAREA", "FRACNNEI", "DESTNNEI",
                                             "FRACARTR", "DESTARTR", "FRACNNTR", "DESTNNTR"};
    if (!norms.count(s.normalization))
      fail("unknown SCRIPR CONSERV normalisation " + quoted(s.normalization),
           "use FRACAREA, DESTAREA, FRACNNEI (or OASIS 5's DESTNNEI and the true-area *ARTR, *NNTR)");
    if (s.order != "FIRST" && s.order != "SECOND")  // OASIS does not check it
      fail("SCRIPR CONSERV order " + quoted(s.order) + " is not supported by estuary", "use FIRST or SECOND");
  }
  // Accepted by OASIS3-MCT, not (yet) by estuary: refused rather than approximated.
  s.weighting = upper(s.weighting);
  s.scaling = upper(s.scaling);
  if (s.method == "SPMAP") {
    if (s.weighting != "AVG" && s.weighting != "DIST")
      fail("unknown SPMAP weighting " + quoted(s.weighting), "use avg or dist (YAC's; for Gaussian weights use loccgaus)");
    if (s.scaling != "FRACAREA" && s.scaling != "SRCAREA" && s.scaling != "INVTGTAREA" && s.scaling != "NONE")
      fail("unknown SPMAP scaling " + quoted(s.scaling), "use fracarea, srcarea, invtgtarea or none");
    if (!(s.spread_distance >= 0 && s.spread_distance <= 180 && s.max_search_distance >= 0 && s.max_search_distance <= 180))
      fail("the SPMAP spread distance " + number_text(s.spread_distance) + " and search distance " +
               number_text(s.max_search_distance) + " must be from 0 to 180 degrees",
           "give angles in degrees (max_search_distance 0: no limit)");
  }
  const bool gauss = s.method == "GAUSWGT" || s.method == "LOCCGAUS";
  if (gauss && !(s.variance > 0))
    fail("the SCRIPR " + s.method + " variance must be positive, not " + number_text(s.variance),
         "give OASIS's variance multiplier, e.g. 1 (OASIS3-MCT stops on 0 too)");
  if (s.method == "CONSERV" && s.normalization != "FRACAREA" && s.normalization != "DESTAREA" &&
      s.normalization != "FRACNNEI")
    fail("SCRIPR CONSERV normalisation " + s.normalization + " is not supported yet by estuary",
         "use FRACAREA, DESTAREA or FRACNNEI, or MAPPING with weights generated offline");
  // OASIS's name for the LATITUDE search on a reduced grid.
  if (quads && s.grid_type == "D") s.restriction = "REDUCED";
}

void check_coupling(const CouplingConfig& c, const Fail& fail, bool negative_period_ok) {
  for (const auto* list : {&c.src_fields, &c.dst_fields}) {
    const char* side = list == &c.src_fields ? "source" : "target";
    if (static_cast<long long>(list->size()) > detail::kMaxFieldsPerSide)
      fail(std::to_string(list->size()) + " " + side + " fields, more than the " +
               std::to_string(detail::kMaxFieldsPerSide) + " estuary takes in one coupling",
           "split the coupling");
    std::set<std::string> names;
    for (const std::string& f : *list)
      if (!names.insert(f).second)
        fail(side + std::string(" field ") + quoted(f) + " listed twice in one coupling",
             "each field is exchanged once per coupling; remove the repeat");
  }
  if (c.src_fields.size() != c.dst_fields.size())
    fail(std::to_string(c.src_fields.size()) + " source field(s) but " +
             std::to_string(c.dst_fields.size()) + " target field(s)",
         "list as many target fields as source fields: they correspond by position");
  if (!(c.period > 0) && !(negative_period_ok && c.period < 0))
    fail("coupling period " + number_text(c.period) + " is not positive", "give the period in seconds (> 0)");
  // MAPPING with SCRIPR (or STACK) is OASIS3-MCT's "this file, generated by these settings if it
  // is not there yet" (mod_oasis_coupler: the mapping file named by MAPPING, oasis_map_genmap
  // when it does not exist); two generators are one too many.
  if (c.scripr && !c.interpolation.empty())
    fail("both SCRIPR and STACK (interpolation) in one coupling", "keep one of them");
  if (!c.interpolation.empty()) {
    std::vector<StackStage> stages;
    try {
      for (const StageSpec& st : c.interpolation) stages.push_back(make_stage(st.name, st.params, ""));
      check_stack(stages, "");
    } catch (const Error& e) {
      fail("interpolation: " + e.fault(), e.fix());
    }
  }
  if (c.status == FieldStatus::input && !c.transforms.empty())
    fail("an INPUT field takes no transformations", "remove them");
  if (c.status == FieldStatus::output)
    for (const std::string& t : c.transforms)
      if (t != "LOCTRANS")
        fail("an OUTPUT field takes only LOCTRANS, not " + t, "remove " + t);
}

void Exchanges::add(const CouplingConfig& c, const Fail& fail) {
  for (std::size_t i = 0; i < c.src_fields.size() && i < c.dst_fields.size(); ++i) {
    if (static_cast<long long>(seen_.size()) >= kMaxFieldsTotal)
      fail("more than " + std::to_string(kMaxFieldsTotal) + " exchanged fields in the configuration",
           "estuary takes at most that many");
    const auto [it, fresh] = seen_.emplace(
        std::make_tuple(c.src_component, c.src_fields[i], c.dst_component, c.dst_fields[i]), c.origin);
    if (!fresh)
      fail("the exchange " + c.src_fields[i] + " -> " + c.dst_fields[i] +
               " is configured twice (first at " + it->second + ")",
           "remove one of the two couplings");
  }
}

void apply_timeout_override(CouplingSetup& s) { s.timeout = Settings::get().timeout_s(s.timeout); }

}  // namespace estuary::detail::config
