// estuary's coupling YAML reader (read_coupling_yaml): fills the CouplingSetup the namcouple
// reader fills, over the shared vocabulary and checks of config_checks.hpp.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/cf_calendar.hpp"
#include "common/checked.hpp"
#include "config/yaml_file.hpp"
#include "couple/config_checks.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "estuary/schedule.hpp"
#include "estuary/weightgen.hpp"

namespace estuary {

namespace {

using namespace detail::config;

// The `couplings:` section and the run settings of estuary's configuration file
// (config/yaml_file.hpp: the file may hold an `output:` section too, which the I/O layer reads).
// Errors name the file, the line and the key, as every reader of that file does.
class Yaml {
 public:
  explicit Yaml(const std::string& path) : doc_(YamlFile::load(path)) {}
  CouplingSetup read();

 private:
  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what,
                         const std::string& fix = {}) const {
    doc_.fail(at, key, what, fix);
  }
  void keys(const YAML::Node& map, const std::string& ctx, std::initializer_list<const char*> known) const {
    doc_.keys(map, ctx, known);
  }
  YAML::Node required(const YAML::Node& map, const char* key, const std::string& ctx) const {
    return doc_.required(map, key, ctx);
  }
  std::string scalar(const YAML::Node& v, const std::string& key) const { return doc_.scalar(v, key); }
  double number(const YAML::Node& v, const std::string& key) const { return doc_.number(v, key); }
  long long integer(const YAML::Node& v, const std::string& key, long long lo = kIntMin,
                    long long hi = kIntMax) const {
    return doc_.integer(v, key, lo, hi);
  }
  bool boolean(const YAML::Node& v, const std::string& key) const { return doc_.boolean(v, key); }

  CouplingConfig coupling(const YAML::Node& n, const std::string& ctx);
  void side(const YAML::Node& n, const std::string& ctx, std::vector<std::string>& fields,
            std::string& component, GridRef& grid);
  void transform(const YAML::Node& item, const std::string& ctx, CouplingConfig& c);
  void interpolation(const YAML::Node& list, const std::string& ctx, CouplingConfig& c);

  YamlFile doc_;
};

CouplingSetup Yaml::read() {
  const YAML::Node& root = doc_.root();  // const: lookups of absent keys must not add them
  doc_.check_sections();  // the run settings, couplings and output (read by the I/O layer)
  CouplingSetup s;
  s.path = doc_.source();
  const YAML::Node rt = required(root, "runtime", "");
  s.runtime = number(rt, "runtime");
  if (!(s.runtime > 0)) fail(rt, "runtime", "runtime must be positive", "give the run length in seconds");
  if (const auto v = root["log_level"]) s.log_level = static_cast<int>(integer(v, "log_level"));
  if (const auto v = root["no_restart"]) s.no_restart = boolean(v, "no_restart");
  if (const auto v = root["timeline"]) s.timeline = boolean(v, "timeline");
  if (const auto v = root["map_decomposition"]) s.map_decomposition = scalar(v, "map_decomposition");
  if (const auto v = root["weight_option"]) s.weight_option = scalar(v, "weight_option");
  if (const auto v = root["schedule"]) {
    s.schedule = scalar(v, "schedule");
    const std::vector<std::string> known = schedule_names();
    if (std::find(known.begin(), known.end(), s.schedule) == known.end()) {
      std::string list;
      for (const std::string& k : known) list.append(list.empty() ? "" : ", ").append(k);
      fail(v, "schedule", "unknown schedule " + quoted(s.schedule), "use one of " + list);
    }
  }
  if (const auto v = root["calendar"]) {
    s.calendar = scalar(v, "calendar");
    if (!detail::is_cf_calendar(s.calendar))
      fail(v, "calendar", "unknown calendar '" + s.calendar + "'", std::string("use a CF calendar: ") + detail::cf_calendar_names());
  }
  if (const auto v = root["start_date"]) {
    try {
      s.start_date = detail::parse_cf_date(scalar(v, "start_date"), s.calendar, "start_date").text();
    } catch (const Error& e) {
      fail(v, "start_date", e.fault(), e.fix());
    }
  }
  if (const auto v = root["timeout"]) {
    s.timeout = number(v, "timeout");
    if (!(s.timeout > 0)) fail(v, "timeout", "timeout must be positive", "give it in seconds");
  }
  const YAML::Node list = required(root, "couplings", "");
  if (!list.IsSequence()) fail(list, "couplings", "couplings must be a list (items start with '- ')");
  if (static_cast<long long>(list.size()) > detail::kMaxCouplings)
    fail(list, "couplings", std::to_string(list.size()) + " couplings, more than the " +
                                std::to_string(detail::kMaxCouplings) + " estuary reads");
  Exchanges exchanges;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string ctx = "couplings[" + std::to_string(i) + "]";
    CouplingConfig c = coupling(list[i], ctx);
    exchanges.add(c, [&](const std::string& what, const std::string& fix) { fail(list[i], ctx, ctx + ": " + what, fix); });
    s.couplings.push_back(std::move(c));
  }
  apply_timeout_override(s);
  return s;
}

void Yaml::side(const YAML::Node& n, const std::string& ctx, std::vector<std::string>& fields,
                std::string& component, GridRef& grid) {
  keys(n, ctx, {"component", "field", "fields", "grid", "nx", "ny", "periodic", "overlap"});
  const YAML::Node one = n["field"], many = n["fields"];
  if (one && many) fail(n, ctx, ctx + " has both 'field' and 'fields'", "give one of them");
  if (!one && !many) fail(n, ctx + ".fields", "missing required key 'fields' (or 'field') in " + ctx);
  if (one) {
    fields = {scalar(one, ctx + ".field")};
  } else {
    if (!many.IsSequence() || many.size() == 0)
      fail(many, ctx + ".fields", ctx + ".fields must be a non-empty list of names", "e.g. fields: [SST, SSS]");
    if (static_cast<long long>(many.size()) > detail::kMaxFieldsPerSide)
      fail(many, ctx + ".fields", ctx + ".fields lists " + std::to_string(many.size()) + " fields, more than the " +
                     std::to_string(detail::kMaxFieldsPerSide) + " estuary takes in one coupling");
    for (const auto& f : many) fields.push_back(scalar(f, ctx + ".fields"));
  }
  for (const std::string& f : fields)
    if (f.empty()) fail(one ? one : many, ctx + (one ? ".field" : ".fields"), "empty field name in " + ctx);
  if (const auto v = n["component"]) component = scalar(v, ctx + ".component");
  if (const auto v = n["grid"]) grid.name = scalar(v, ctx + ".grid");
  // Grid sizes: both or neither, each at least 1, and their product within 64 bits.
  if (const auto v = n["nx"]) grid.nx = integer(v, ctx + ".nx", 1, kSizeMax);
  if (const auto v = n["ny"]) grid.ny = integer(v, ctx + ".ny", 1, kSizeMax);
  if (n["nx"] && !n["ny"]) fail(n["nx"], ctx + ".nx", ctx + " gives nx without ny", "give both nx and ny, or neither");
  if (n["ny"] && !n["nx"]) fail(n["ny"], ctx + ".ny", ctx + " gives ny without nx", "give both nx and ny, or neither");
  if (grid.nx > 0 && !detail::mul_size(grid.nx, grid.ny))
    fail(n["ny"], ctx + ".ny", ctx + " grid size " + std::to_string(grid.nx) + " x " + std::to_string(grid.ny) +
                      " overflows a 64-bit integer");
  if (const auto v = n["periodic"])
    grid.periodicity = boolean(v, ctx + ".periodic") ? Periodicity::periodic : Periodicity::regional;
  if (const auto v = n["overlap"]) {
    grid.overlap = static_cast<int>(integer(v, ctx + ".overlap", 0));
  }
}

CouplingConfig Yaml::coupling(const YAML::Node& n, const std::string& ctx) {
  keys(n, ctx, {"source", "target", "period", "lag", "seq", "status", "restart", "file",
                "transforms", "interpolation"});
  CouplingConfig c;
  c.origin = doc_.line_of(n);
  if (const auto v = n["status"]) {
    bool renamed = false;
    const auto st = status_named(scalar(v, ctx + ".status"), renamed);
    if (!st) fail(v, ctx + ".status", "unknown " + ctx + ".status " + quoted(v.Scalar()),
                  std::string("use ") + kStatusesText);
    c.status = *st;
  }
  side(required(n, "source", ctx), ctx + ".source", c.src_fields, c.src_component, c.src_grid);
  side(required(n, "target", ctx), ctx + ".target", c.dst_fields, c.dst_component, c.dst_grid);
  // Grids every exchanged field needs; an OUTPUT field has no target and INPUT no source.
  if (c.status != FieldStatus::input && c.src_grid.name.empty())
    fail(n["source"], ctx + ".source.grid", "missing required key 'grid' in " + ctx + ".source");
  if ((c.status == FieldStatus::exported || c.status == FieldStatus::expout) &&
      c.dst_grid.name.empty())
    fail(n["target"], ctx + ".target.grid", "missing required key 'grid' in " + ctx + ".target");
  c.period = number(required(n, "period", ctx), ctx + ".period");
  if (const auto v = n["lag"]) c.lag = number(v, ctx + ".lag");
  c.seq = c.status == FieldStatus::input ? 0 : 1;  // OASIS's default, as a namcouple reads
  if (const auto v = n["seq"]) c.seq = static_cast<int>(integer(v, ctx + ".seq", 0));
  if (const auto v = n["restart"]) {
    if (c.status == FieldStatus::input) fail(v, ctx + ".restart", "an INPUT field has no restart file", "remove 'restart'");
    c.restart_file = scalar(v, ctx + ".restart");
  }
  if (const auto v = n["file"]) {
    if (c.status != FieldStatus::input && c.status != FieldStatus::output)
      fail(v, ctx + ".file", ctx + ".file is only for status input or output", "the restart file is 'restart'");
    c.input_file = scalar(v, ctx + ".file");
  }
  if (c.status == FieldStatus::input && c.input_file.empty())
    fail(n, ctx + ".file", "missing required key 'file' in " + ctx + " (the file an INPUT field is read from)");
  if (const auto list = n["transforms"]) {
    if (!list.IsSequence()) fail(list, ctx + ".transforms", ctx + ".transforms must be a list");
    for (std::size_t i = 0; i < list.size(); ++i)
      transform(list[i], ctx + ".transforms[" + std::to_string(i) + "]", c);
  }
  if (const auto list = n["interpolation"]) interpolation(list, ctx + ".interpolation", c);
  check_coupling(c, [&](const std::string& what, const std::string& fix) {
    fail(n, ctx, ctx + ": " + what, fix);
  });
  return c;
}

// `interpolation: [bilinear, {nnn: {n: 4}}, {fixed: {value: -999}}]`: each stage is a name, or a
// mapping of its name to its parameters; every stage is checked where it is written.
void Yaml::interpolation(const YAML::Node& list, const std::string& ctx, CouplingConfig& c) {
  if (!list.IsSequence() || list.size() == 0)
    fail(list, ctx, ctx + " must be a non-empty list of stages", "e.g. [bilinear, {nnn: {n: 4}}, {fixed: {value: -999}}]");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string at = ctx + "[" + std::to_string(i) + "]";
    StageSpec st;
    if (item.IsScalar()) {
      st.name = item.Scalar();
    } else {
      if (!item.IsMap() || item.size() != 1)
        fail(item, at, at + " must be a stage name or a mapping with one key, the stage's name", "e.g. '{nnn: {n: 4}}'");
      st.name = item.begin()->first.Scalar();
      const YAML::Node params = item.begin()->second;
      if (!params.IsNull()) {
        if (!params.IsMap()) fail(params, at + "." + st.name, at + "." + st.name + " must be a mapping of parameters", "e.g. '{n: 4}'");
        for (const auto& kv : params)
          st.params.emplace_back(kv.first.Scalar(), scalar(kv.second, at + "." + st.name + "." + kv.first.Scalar()));
      }
    }
    try {
      make_stage(st.name, st.params, "");
    } catch (const Error& e) {
      fail(item, at, at + ": " + e.fault(), e.fix());
    }
    c.interpolation.push_back(st);
  }
  c.transforms.push_back("STACK");
}

void Yaml::transform(const YAML::Node& item, const std::string& ctx, CouplingConfig& c) {
  // An item is "- checkin" or a mapping with one key: the transformation's name.
  std::string name;
  YAML::Node v;  // the settings; assigned once, while still empty
  const bool alone = item.IsScalar();
  if (alone) {
    name = item.Scalar();
    if (name != "checkin" && name != "checkout")
      fail(item, ctx, ctx + ": " + quoted(name) + " needs its settings",
           "write e.g. '- loctrans: average' (only checkin and checkout stand alone)");
  } else {
    if (!item.IsMap() || item.size() != 1)
      fail(item, ctx, ctx + " must have exactly one key, the transformation's name",
           "e.g. '- mapping: {file: w.nc}'");
    name = item.begin()->first.Scalar();
    v = item.begin()->second;
  }
  const std::string up = upper(name);
  const YAML::Node at = item.IsMap() ? item.begin()->first : item;
  if (!is_transform(up) || name != lower(name))
    fail(at, ctx + "." + name, "unknown transformation " + quoted(name) + " in " + ctx,
         "use loctrans, mapping, scripr, conserv, blasold, blasnew, checkin or checkout");
  if (up == "STACK")
    fail(at, ctx + "." + name, "stack is the namcouple's name; in YAML the stages are the coupling's key 'interpolation'",
         "write 'interpolation: [bilinear, {nnn: {n: 4}}]' next to 'transforms'");
  if (std::find(c.transforms.begin(), c.transforms.end(), up) != c.transforms.end())
    fail(at, ctx + "." + name, "transformation " + name + " listed twice");
  c.transforms.push_back(up);
  const std::string key = ctx + "." + name;

  if (up == "LOCTRANS") {
    const auto op = loctrans_by_name(scalar(v, key));
    if (!op) fail(v, key, "unknown " + key + " " + quoted(v.Scalar()),
                  "use instant, accumul, average, t_min or t_max");
    c.loctrans = *op;
  } else if (up == "MAPPING") {
    MappingSpec m;
    if (v.IsScalar()) {
      m.file = v.Scalar();
    } else {
      keys(v, key, {"file", "location", "order"});
      m.file = scalar(required(v, "file", key), key + ".file");
      if (const auto x = v["location"]) {
        const auto l = location_named(scalar(x, key + ".location"));
        if (!l) fail(x, key + ".location", "unknown " + key + ".location " + quoted(x.Scalar()), "use src or dst");
        m.location = *l;
      }
      if (const auto x = v["order"]) {
        const auto o = order_named(scalar(x, key + ".order"));
        if (!o) fail(x, key + ".order", "unknown " + key + ".order " + quoted(x.Scalar()), "use bfb or sum (opt)");
        m.order = *o;
      }
    }
    c.mapping = m;
  } else if (up == "SCRIPR") {
    keys(v, key, {"method", "grid_type", "field_type", "restriction", "bins", "neighbors", "normalization", "order",
                  "nearest_fill", "variance", "spread_distance", "max_search_distance", "weighting", "scaling", "name"});
    ScriprSpec s;
    s.method = upper(scalar(required(v, "method", key), key + ".method"));
    // YAC's callback interpolation: weights from a function the target component registers.
    if (v["name"] && s.method != "CALLBACK") fail(v["name"], key + ".name", key + ".name is for method callback only");
    if (s.method == "CALLBACK") {
      s.callback = scalar(required(v, "name", key), key + ".name");
      s.nearest_fill = false;  // the function's links are the whole matrix
    }
    s.grid_type = v["grid_type"] ? scalar(v["grid_type"], key + ".grid_type") : "LR";
    s.field_type = v["field_type"] ? scalar(v["field_type"], key + ".field_type") : "SCALAR";
    s.restriction = v["restriction"] ? scalar(v["restriction"], key + ".restriction") : "LATLON";
    if (const auto x = v["bins"]) s.bins = static_cast<int>(integer(x, key + ".bins", 1));
    // OASIS's nearest-neighbour fill of targets the method leaves empty (namcouple: *NF is false).
    if (const auto x = v["nearest_fill"]) s.nearest_fill = boolean(x, key + ".nearest_fill");
    const bool locc = s.method == "LOCCUNIF" || s.method == "LOCCDIST" || s.method == "LOCCGAUS";
    if (const auto x = v["neighbors"]) {
      if (s.method != "DISTWGT" && s.method != "GAUSWGT" && !locc)
        fail(x, key + ".neighbors", key + ".neighbors is for methods distwgt, gauswgt and locc* only");
      s.neighbors = static_cast<int>(integer(x, key + ".neighbors", 1));
    } else if (locc) {
      s.neighbors = 1;  // the nearest ocean point
    }
    const bool spmap = s.method == "SPMAP";
    for (const char* k : {"spread_distance", "max_search_distance", "weighting", "scaling"})
      if (v[k] && !spmap) fail(v[k], key + "." + k, key + "." + k + " is for method spmap only");
    if (spmap) {
      s.spread_distance = v["spread_distance"] ? number(v["spread_distance"], key + ".spread_distance") : 0.0;
      s.max_search_distance = v["max_search_distance"] ? number(v["max_search_distance"], key + ".max_search_distance") : 0.0;
      s.weighting = v["weighting"] ? scalar(v["weighting"], key + ".weighting") : "AVG";
      s.scaling = v["scaling"] ? scalar(v["scaling"], key + ".scaling") : "NONE";  // YAC's default
    }
    const bool gauss = s.method == "GAUSWGT" || s.method == "LOCCGAUS";
    if (v["variance"] && !gauss) fail(v["variance"], key + ".variance", key + ".variance is for methods gauswgt and loccgaus only");
    if (gauss) s.variance = number(required(v, "variance", key), key + ".variance");
    for (const char* k : {"normalization", "order"})
      if (v[k] && s.method != "CONSERV") fail(v[k], key + "." + k, key + "." + k + " is for method conserv only");
    if (s.method == "CONSERV") {
      s.normalization = scalar(required(v, "normalization", key), key + ".normalization");
      s.order = v["order"] ? scalar(v["order"], key + ".order") : "FIRST";
    }
    check_scripr(s, [&](const std::string& what, const std::string& fix) { fail(v, key, what, fix); });
    c.scripr = s;
  } else if (up == "CONSERV") {
    ConservSpec cs;
    if (!v.IsScalar()) {
      keys(v, key, {"mode", "method"});
      if (const auto x = v["method"]) {
        const auto m = sum_method_named(scalar(x, key + ".method"));
        if (!m) fail(x, key + ".method", "unknown " + key + ".method " + quoted(x.Scalar()),
                     std::string("use ") + kSumMethodsText);
        cs.method = *m;
      }
    }
    // Never reassign a YAML::Node: assignment rebinds the node inside the loaded tree.
    const YAML::Node mode = v.IsScalar() ? v : required(v, "mode", key);
    const auto md = conserv_mode_named(scalar(mode, key + ".mode"));
    if (!md) fail(mode, key + (v.IsScalar() ? "" : ".mode"), "unknown " + key + ".mode " + quoted(mode.Scalar()),
                  "use global, glbpos, basbal or baspos");
    cs.mode = *md;
    c.conserv = cs;
  } else if (up == "BLASOLD" || up == "BLASNEW") {
    keys(v, key, {"scale", "add"});
    BlasSpec b;
    if (const auto x = v["scale"]) b.scale = number(x, key + ".scale");
    if (const auto x = v["add"]) b.add = number(x, key + ".add");
    (up == "BLASOLD" ? c.blasold : c.blasnew) = b;
  } else {
    if (!alone && !boolean(v, key))
      fail(v, key, key + ": false is not meaningful here", "remove the item to switch it off");
    (up == "CHECKIN" ? c.checkin : c.checkout) = true;
  }
}


}  // namespace

CouplingSetup read_coupling_yaml(const std::string& path) { return Yaml(path).read(); }

}  // namespace estuary
