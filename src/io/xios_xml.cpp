// The output configuration from XIOS's XML (an iodef.xml and the files it includes, as NEMO
// ships them): a context's field_definition (fields and field groups, attributes inherited
// from the groups) and file_definition (file groups, files, and their fields that refer to the
// definitions with field_ref), resolved the way XIOS resolves them, into the OutputConfig the
// YAML gives; expressions, `@` temporal operations in them included, become derived fields
// (io/derived.hpp). What estuary cannot write as XIOS would (a grid transformation inside an
// expression, ...) is an error, or with skip_unsupported a warning that leaves the field out; what only
// changes metadata or performance is a warning. Every message names the file, the line, the
// element and the attribute: "file_def.xml:12, <field field_ref=\"sst\">, attribute freq_op".
//
// pugixml reads the XML (Debian's libpugixml-dev, required by the io part: it is small,
// maintained, and gives each node's offset in its file, from which the lines come).
#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "common/checked.hpp"
#include "io/config_checks.hpp"
#include "io/derived.hpp"
#include "io/zoom.hpp"

namespace estuary::io {

OutputConfig OutputConfig::from_xios_xml(const std::string& path) { return from_xios_xml(path, XiosXmlOptions{}); }

namespace {
// The words of the error for a field on another grid inside an expression: the caller leaves
// the file's field out for it under skip_unsupported.
constexpr const char* kExprGridTransformation = "a grid transformation inside an expression is not supported";

namespace fs = std::filesystem;

// XIOS's defaults (CFile::getEnabledFields): a file's output_level 5, a field's level 1.
constexpr int kDefaultOutputLevel = 5;
constexpr int kDefaultFieldLevel = 1;

// What estuary does with an attribute of an element.
enum class Use {
  read,    // read into the configuration
  quiet,   // no effect on what estuary writes (performance, deployment, reading files)
  warn,    // metadata or file layout XIOS would write and estuary does not
  refuse,  // changes the numbers written: an error (or, skip_unsupported, the field left out)
};
struct AttrRule {
  const char* name;
  Use use;
  const char* why;  // for warn and refuse
};

// XIOS's field attributes (field_attribute.conf), also those of field groups.
constexpr AttrRule kFieldAttrs[] = {
    {"id", Use::read, ""},
    {"name", Use::read, ""},
    {"field_ref", Use::read, ""},
    {"group_ref", Use::read, ""},
    {"src", Use::read, ""},
    {"operation", Use::read, ""},
    {"freq_op", Use::read, ""},
    {"enabled", Use::read, ""},
    {"level", Use::read, ""},
    {"prec", Use::read, ""},
    {"default_value", Use::read, ""},
    {"unit", Use::read, ""},
    {"long_name", Use::read, ""},
    {"standard_name", Use::read, ""},
    {"grid_ref", Use::read, ""},
    {"domain_ref", Use::read, ""},
    {"axis_ref", Use::read, ""},
    {"scalar_ref", Use::read, ""},
    {"compression_level", Use::read, ""},
    {"expr", Use::read, ""},
    {"detect_missing_value", Use::read, ""},
    {"freq_offset", Use::read, ""},
    {"read_access", Use::quiet, ""},
    {"check_if_active", Use::quiet, ""},
    {"grid_path", Use::read, ""},
    {"comment", Use::warn, "estuary writes no comment attribute"},
    {"cell_methods", Use::warn, "estuary writes cell_methods from the operation"},
    {"cell_methods_mode", Use::warn, "estuary writes cell_methods from the operation"},
    {"valid_min", Use::warn, "estuary writes no valid_min attribute"},
    {"valid_max", Use::warn, "estuary writes no valid_max attribute"},
    {"ts_enabled", Use::warn, "estuary writes no time-series files"},
    {"ts_split_freq", Use::warn, "estuary writes no time-series files"},
    {"indexed_output", Use::warn, "estuary writes the whole grid"},
    {"add_offset", Use::refuse, "packed values (add_offset) are not written by estuary"},
    {"scale_factor", Use::refuse, "packed values (scale_factor) are not written by estuary"},
    {"build_workflow_graph", Use::quiet, ""},
};

// XIOS's file attributes (file_attribute.conf), also those of file groups and the definition.
constexpr AttrRule kFileAttrs[] = {
    {"id", Use::read, ""},
    {"name", Use::read, ""},
    {"name_suffix", Use::read, ""},
    {"src", Use::read, ""},
    {"output_freq", Use::read, ""},
    {"split_freq", Use::read, ""},
    {"sync_freq", Use::read, ""},
    {"enabled", Use::read, ""},
    {"output_level", Use::read, ""},
    {"compression_level", Use::read, ""},
    {"format", Use::read, ""},
    {"type", Use::read, ""},
    {"mode", Use::read, ""},
    {"par_access", Use::quiet, ""},
    {"min_digits", Use::quiet, ""},
    {"cyclic", Use::quiet, ""},
    {"record_offset", Use::quiet, ""},
    {"read_metadata_par", Use::quiet, ""},
    {"description", Use::warn, "estuary writes no description attribute"},
    {"split_freq_format", Use::warn, "estuary names split files <name>_<start date>.nc"},
    {"split_start_offset", Use::refuse, "estuary splits files at multiples of split_freq"},
    {"split_end_offset", Use::refuse, "estuary splits files at multiples of split_freq"},
    {"split_last_date", Use::refuse, "estuary splits files at multiples of split_freq"},
    {"time_counter", Use::warn, "estuary's time axis is `time` (with time_bnds for period operations)"},
    {"time_counter_name", Use::warn, "estuary's time axis is `time`"},
    {"time_units", Use::warn, "estuary's time axis is in seconds since reference_time"},
    {"time_stamp_name", Use::warn, "estuary writes no time stamp attribute"},
    {"time_stamp_format", Use::warn, "estuary writes no time stamp attribute"},
    {"uuid_name", Use::warn, "estuary writes no uuid attribute"},
    {"uuid_format", Use::warn, "estuary writes no uuid attribute"},
    {"convention", Use::warn, "estuary writes CF-1.8 files"},
    {"convention_str", Use::warn, "estuary writes CF-1.8 files"},
    {"append", Use::warn, "estuary creates its files anew"},
    {"timeseries", Use::warn, "estuary writes no time-series files"},
    {"ts_prefix", Use::warn, "estuary writes no time-series files"},
    {"writer", Use::quiet, ""},
    {"gatherer", Use::quiet, ""},
    {"using_server2", Use::quiet, ""},
};

const AttrRule* rule_of(const AttrRule* begin, const AttrRule* end, const std::string& name) {
  for (const AttrRule* r = begin; r != end; ++r)
    if (name == r->name) return r;
  return nullptr;
}
const AttrRule* field_rule(const std::string& n) { return rule_of(std::begin(kFieldAttrs), std::end(kFieldAttrs), n); }
const AttrRule* file_rule(const std::string& n) { return rule_of(std::begin(kFileAttrs), std::end(kFileAttrs), n); }

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An attribute's value and the element that set it (its own, a group's, a referenced field's).
struct Attr {
  std::string value;
  pugi::xml_node at;
};
using Attrs = std::map<std::string, Attr>;

// A field of the field_definition: its element and its attributes with the groups' below its own.
struct DefField {
  pugi::xml_node node;
  Attrs attrs;
};

// One XML file read, its lines found from the nodes' offsets.
struct XmlFile {
  std::string path;
  std::string text;
  pugi::xml_document doc;
  std::vector<std::size_t> line_starts;
  pugi::xml_node included_from;  // the element whose src= named this file (none: the top file)
};

class XiosReader {
 public:
  XiosReader(const XiosXmlOptions& opt, XiosXmlInfo& info) : opt_(opt), info_(info) {}

  OutputConfig read(const std::string& path);

 private:
  const XiosXmlOptions& opt_;
  XiosXmlInfo& info_;
  std::deque<XmlFile> files_;  // stable addresses: nodes point into them
  int depth_ = 0;              // nesting of groups being read
  // One level of group nesting (each is a call): deeper than 100 is an error at `at`, so that
  // a file of 16 MiB cannot nest a million and exhaust the stack.
  struct Deeper {
    XiosReader& r;
    Deeper(XiosReader& reader, pugi::xml_node at) : r(reader) {
      if (++r.depth_ > 100) {
        --r.depth_;
        r.fail(at, "", "elements nested deeper than 100 levels", "flatten the groups");
      }
    }
    ~Deeper() { --r.depth_; }
    Deeper(const Deeper&) = delete;
    Deeper& operator=(const Deeper&) = delete;
  };
  std::map<std::string, DefField> defs_;                     // field_definition fields by id
  std::map<std::string, std::vector<DefField>> def_groups_;  // field_definition groups' fields, by group id
  std::set<std::string> warned_;                             // warnings once each
  OutputConfig cfg_;
  // The file grid a field's grid_ref / domain_ref asks for, when that is XIOS's
  // <interpolate_domain> to a generated rectilinear domain; nullopt for any other grid.
  std::optional<RegridConfig> interpolation(const std::string& grid_ref, const std::string& domain_ref);

  const XmlFile& load(const std::string& path, pugi::xml_node from, const char* attr);
  const XmlFile& file_of(pugi::xml_node n) const;
  std::string where(pugi::xml_node n, const std::string& attr = {}) const;
  [[noreturn]] void fail(pugi::xml_node n, const std::string& attr, const std::string& what,
                         const std::string& fix = {}) const {
    throw Error(what, where(n, attr), fix);
  }
  void warn(pugi::xml_node n, const std::string& attr, const std::string& what);
  pugi::xml_node included(pugi::xml_node n);
  void check_attrs(pugi::xml_node n, bool field);
  void read_context(pugi::xml_node ctx);
  void read_calendar(pugi::xml_node e, bool context);
  void read_field_definition(pugi::xml_node n, const Attrs& inherited, std::vector<std::vector<DefField>*> groups);
  void read_file_definition(pugi::xml_node n, const Attrs& inherited);
  void read_file(pugi::xml_node n, const Attrs& attrs);
  void collect_file_fields(pugi::xml_node n, const Attrs& inherited, std::vector<DefField>& out);
  bool resolve_field(const DefField& f, FileConfig& fc, int output_level, const Attr* file_compression,
                     std::set<std::string>& names);
  // ---- expressions (XIOS's `<field ...> expr </field>` and `expr=`) ----
  // The expression of an element ("" when it has none): its expr attribute or its text.
  static std::string expression_text(pugi::xml_node n);
  // An XIOS expression of element `at` in estuary's terms, into fd (expr, at): each name is a
  // field_definition id, followed through field_ref to the model's field or to a field with an
  // expression of its own (added to cfg_.derived under its id); `@x` is x's own operation over
  // freq_op; `this` is `this_ref`, the field the element refers to. Errors name the element.
  void resolve_expression(pugi::xml_node at, const std::string& text, const std::string& this_ref, FieldConfig& fd);
  // The field_definition field `id` (with an expression) as a derived field of cfg_.derived, once.
  void add_derived(const std::string& id);
  std::set<std::string> derived_ids_;
  // Variables of the file being read whose data are a `@` expression with freq_op = output_freq.
  std::set<std::string> period_values_;
  Frequency duration(const Attr& a, const std::string& attr, bool allow_months);
  bool boolean(const Attr& a, const std::string& attr);
  int integer(const Attr& a, const std::string& attr, int lo, int hi);
  std::string file_name(const Attrs& a, pugi::xml_node file);

  // Axis, domain and grid definitions: kept unread until a field's grid differs from the field
  // it refers to; then indexed by id (their src= files loaded if they are there) so that the
  // difference can be read as a zoom or vertical levels (io/xios_zoom part below).
  std::vector<pugi::xml_node> grid_def_roots_;
  bool grid_defs_indexed_ = false;
  std::map<std::string, pugi::xml_node> axes_, domains_, grids_;
  void index_grid_defs(pugi::xml_node n);
  void index_grid_defs_once();
  struct GridParts {
    pugi::xml_node domain, axis, scalar_node;  // scalar_node: a <scalar> element of the grid
    std::string domain_ref, axis_ref;  // when given by id without an element here
    bool scalar = false, known = true;
  };
  GridParts grid_parts(const std::string& spec);
  struct Walk {
    std::string root;                        // the id the chain of *_ref ends at
    std::vector<pugi::xml_node> transforms;  // child elements met on the way (zoom_domain, ...)
    std::vector<pugi::xml_node> holders;     // the element holding each transformation
  };
  Walk walk(pugi::xml_node n, const std::string& ref, const char* kind);
  // The grid `target` of a file's field as a zoom and levels of grid `base` of the field it
  // refers to, into view: nullopt when it is; "" when the definitions do not tell (absent);
  // else why not, with the place.
  std::optional<std::string> map_grid(const std::string& base, const std::string& target, FieldConfig& view);
  // The first transformation on the grid `spec` itself (its domain's or axis' chain), if the
  // definitions are here: the grid of a field with no other grid below it.
  std::optional<pugi::xml_node> own_transformation(const std::string& spec);
};

// ---- files, lines, messages ----

const XmlFile& XiosReader::load(const std::string& path, pugi::xml_node from, const char* attr) {
  // A file that includes itself, directly or through others, would never end.
  for (pugi::xml_node n = from; n; n = file_of(n).included_from)
    if (file_of(n).path == path)
      fail(from, attr, "'" + path + "' includes itself", "remove the cycle of src= includes");
  std::optional<std::string> text = estuary::detail::read_config_file(path);  // size and UTF-8 checked
  if (!text) {
    if (from) fail(from, attr, "cannot open '" + path + "'", "give a path relative to the including file");
    throw Error("cannot open the XIOS file", path, "check the path");
  }
  XmlFile& f = files_.emplace_back();
  f.path = path;
  f.text = std::move(*text);
  f.included_from = from;
  f.line_starts.push_back(0);
  for (std::size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  // parse_default keeps the text of elements (expressions); parse_ws_pcdata is not needed.
  const pugi::xml_parse_result r =
      f.doc.load_buffer(f.text.data(), f.text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    const auto line = std::upper_bound(f.line_starts.begin(), f.line_starts.end(),
                                       static_cast<std::size_t>(std::max<std::ptrdiff_t>(r.offset, 0))) -
                      f.line_starts.begin();
    throw Error(std::string("XML: ") + r.description(), path + ":" + std::to_string(line), "fix the XML syntax");
  }
  return f;
}

const XmlFile& XiosReader::file_of(pugi::xml_node n) const {
  const pugi::xml_node root = n.root();
  for (const XmlFile& f : files_)
    if (f.doc == root) return f;
  return files_.front();
}

std::string XiosReader::where(pugi::xml_node n, const std::string& attr) const {
  const XmlFile& f = file_of(n);
  const std::ptrdiff_t off = n.offset_debug();
  std::string s = f.path;
  if (off >= 0) {
    const auto line = std::upper_bound(f.line_starts.begin(), f.line_starts.end(), static_cast<std::size_t>(off)) -
                      f.line_starts.begin();
    s += ":" + std::to_string(line);
  }
  s.append(", <").append(n.name());
  for (const char* key : {"id", "field_ref", "group_ref", "name"})
    if (const pugi::xml_attribute a = n.attribute(key)) {
      s.append(" ").append(key).append("=\"").append(a.value()).append("\"");
      break;
    }
  s += ">";
  if (!attr.empty()) s.append(", attribute ").append(attr);
  return s;
}

void XiosReader::warn(pugi::xml_node n, const std::string& attr, const std::string& what) {
  std::string w = where(n, attr);
  w.append(": ").append(what);
  if (warned_.insert(w).second) info_.warnings.push_back(w);
}

// An element with src="file": the root element of that file (the same element name), read in
// its place; the element's own attributes are kept over the root's (Attrs below).
pugi::xml_node XiosReader::included(pugi::xml_node n) {
  const pugi::xml_attribute src = n.attribute("src");
  if (!src) return {};
  fs::path p(src.value());
  if (p.is_relative()) p = fs::path(file_of(n).path).parent_path() / p;
  const std::string path = p.lexically_normal().string();
  const XmlFile& f = load(path, n, "src");
  const pugi::xml_node root = f.doc.document_element();
  if (std::string(root.name()) != n.name())
    fail(n, "src", "'" + path + "' holds <" + root.name() + ">, not <" + n.name() + ">",
         "include a file whose root element is <" + std::string(n.name()) + ">");
  return root;
}

void XiosReader::check_attrs(pugi::xml_node n, bool field) {
  if (field && std::string(n.name()) == "field")
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const std::string tag = c.name();
      if (tag == "variable" || tag == "variable_group")
        warn(c, "", "<" + tag + "> in a field: estuary writes no extra attributes");
      else fail(c, "", "unknown element <" + tag + "> in a <field>");
    }
  for (const pugi::xml_attribute a : n.attributes()) {
    const AttrRule* r = field ? field_rule(a.name()) : file_rule(a.name());
    if (!r)
      fail(n, a.name(), std::string("unknown attribute of <") + n.name() + ">",
           "XIOS does not know it either: remove it or correct its spelling");
  }
}

Attrs own_attrs(pugi::xml_node n, const Attrs& inherited) {
  Attrs a = inherited;
  for (const pugi::xml_attribute x : n.attributes()) a[x.name()] = Attr{x.value(), n};
  a.erase("src");
  return a;
}

// ---- values ----

bool XiosReader::boolean(const Attr& a, const std::string& attr) {
  const std::string v = lower(trim(a.value));
  if (v == "true" || v == ".true." || v == "1") return true;
  if (v == "false" || v == ".false." || v == "0") return false;
  fail(a.at, attr, "'" + a.value + "' is not a boolean", "use true or false (.TRUE. and .FALSE. also do)");
}

int XiosReader::integer(const Attr& a, const std::string& attr, int lo, int hi) {
  const std::string v = trim(a.value);
  std::size_t used = 0;
  long x = 0;
  try {
    x = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || x < lo || x > hi)
    fail(a.at, attr, "'" + a.value + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int>(x);
}

// An XIOS duration: terms <number><unit>, units y, mo, d, h, mi, s and ts (the model's time
// step), e.g. "1d", "5d", "1mo", "1y", "6h", "30mi", "1ts", "1d12h".
Frequency XiosReader::duration(const Attr& a, const std::string& attr, bool allow_months) {
  const std::string v = trim(a.value);
  auto bad = [&](const std::string& why) {
    fail(a.at, attr, "bad duration '" + a.value + "'" + why,
         "write terms of a number and a unit y, mo, d, h, mi, s or ts, e.g. 5d, 1mo, 6h, 1ts");
  };
  Frequency f;
  double steps = 0;
  std::size_t i = 0;
  if (v.empty()) bad("");
  while (i < v.size()) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v.substr(i), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || !std::isfinite(x) || x < 0) bad("");
    i += used;
    std::size_t j = i;
    while (j < v.size() && std::isalpha(static_cast<unsigned char>(v[j]))) ++j;
    const std::string unit = v.substr(i, j - i);
    i = j;
    if (unit == "y" || unit == "mo") {
      if (x != std::floor(x)) bad(": months and years must be whole");
      f.months += static_cast<int>(x) * (unit == "y" ? 12 : 1);
    } else if (unit == "d") f.seconds += x * 86400;
    else if (unit == "h") f.seconds += x * 3600;
    else if (unit == "mi") f.seconds += x * 60;
    else if (unit == "s") f.seconds += x;
    else if (unit == "ts") steps += x;
    else bad(unit.empty() ? ": a number without a unit" : ": unknown unit '" + unit + "'");
  }
  if (steps > 0) {
    if (!(opt_.timestep_s > 0))
      fail(a.at, attr, "duration '" + a.value + "' counts model time steps and no time step is given",
           "pass the model's time step (XiosXmlOptions::timestep_s; Python timestep=...)");
    f.seconds += steps * opt_.timestep_s;
  }
  if (f.months > 0 && f.seconds > 0)
    fail(a.at, attr, "duration '" + a.value + "' mixes months or years with days or less",
         "estuary's periods are whole months or a fixed number of seconds");
  if (f.months > 0 && !allow_months)
    fail(a.at, attr, "duration '" + a.value + "' in months is not supported here", "give it in d, h, mi, s or ts");
  if (!f) bad(": it is zero");
  return f;
}

// The file's name: name (or the id) and name_suffix, with the @KEY@ templates filled in.
std::string XiosReader::file_name(const Attrs& a, pugi::xml_node file) {
  auto get = [&](const char* k) {
    auto it = a.find(k);
    return it == a.end() ? std::string() : it->second.value;
  };
  std::string name = get("name");
  if (name.empty()) name = get("id");
  if (name.empty()) fail(file, "name", "a file has neither a name nor an id", "give it a name");
  name += get("name_suffix");
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t at = name.find('@', i);
    if (at == std::string::npos) {
      out += name.substr(i);
      break;
    }
    const std::size_t end = name.find('@', at + 1);
    if (end == std::string::npos) {
      out += name.substr(i);
      break;
    }
    out += name.substr(i, at - i);
    const std::string key = name.substr(at + 1, end - at - 1);
    const auto it = opt_.substitutions.find(key);
    if (it != opt_.substitutions.end() && lower(key) == "freq") {
      fail(file, "name", "@freq@ is each file's own output_freq (as NEMO's iom writes it); a value for it would give "
                         "every file one frequency",
           "remove the substitution for '" + key + "'");
    } else if (it != opt_.substitutions.end()) {
      out += it->second;
    } else if (lower(key) == "freq") {  // NEMO's iom: the output frequency, "mo" written "m"
      std::string f;
      for (char c : trim(get("output_freq")))
        if (!std::isspace(static_cast<unsigned char>(c))) f += c;
      if (f.size() > 2 && f.compare(f.size() - 2, 2, "mo") == 0) f.pop_back();
      out += f;
    } else {
      const auto src = a.count("name") ? a.at("name").at : file;
      fail(src, "name", "file name template @" + key + "@ has no value",
           "give it a value: `estuary io check ... --set " + key + "=VALUE`, Python substitutions={\"" + key +
               "\": ...}, C++ XiosXmlOptions::substitutions[\"" + key + "\"]");
    }
    i = end + 1;
  }
  return out;
}

// ---- the context ----

void XiosReader::read_field_definition(pugi::xml_node n, const Attrs& inherited,
                                       std::vector<std::vector<DefField>*> groups) {
  const Deeper guard(*this, n);
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    const std::string tag = c.name();
    if (tag == "field") {
      check_attrs(c, true);
      DefField d{c, own_attrs(c, inherited)};
      for (auto* g : groups) g->push_back(d);
      const pugi::xml_attribute id = c.attribute("id");
      if (!id) continue;  // reachable only through its group (group_ref)
      auto it = defs_.find(id.value());
      if (it == defs_.end()) {
        defs_.emplace(id.value(), std::move(d));
      } else {  // XIOS: one object per id; the later element's attributes are set over the earlier's
        for (auto& [k, v] : d.attrs) it->second.attrs[k] = v;  // (NEMO's field_def repeats bn2 and sopstadv)
      }
    } else if (tag == "field_group") {
      check_attrs(c, true);
      const pugi::xml_node inc = included(c);
      Attrs a = inherited;
      if (inc) a = own_attrs(inc, a);
      a = own_attrs(c, a);
      a.erase("id");
      auto sub = groups;
      if (const pugi::xml_attribute id = c.attribute("id")) sub.push_back(&def_groups_[id.value()]);
      if (inc) read_field_definition(inc, a, sub);
      read_field_definition(c, a, sub);
    } else if (tag == "variable" || tag == "variable_group") {
      warn(c, "", "<" + tag + "> in a field definition: estuary writes no extra attributes");
    } else {
      fail(c, "", "unknown element <" + tag + "> in a field definition", "use <field> and <field_group>");
    }
  }
}

void XiosReader::read_file_definition(pugi::xml_node n, const Attrs& inherited) {
  const Deeper guard(*this, n);
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    const std::string tag = c.name();
    if (tag == "file" || tag == "file_group") {
      check_attrs(c, false);
      const pugi::xml_node inc = included(c);
      Attrs a = inherited;
      a.erase("id");
      if (inc) a = own_attrs(inc, a);
      a = own_attrs(c, a);
      if (tag == "file") {
        if (inc) fail(c, "src", "src= on a <file> is not supported", "include a file_group instead");
        read_file(c, a);
      } else {
        if (inc) read_file_definition(inc, a);
        read_file_definition(c, a);
      }
    } else if (tag == "variable" || tag == "variable_group") {
      warn(c, "", "<" + tag + "> in a file definition: estuary writes no extra global attributes");
    } else {
      fail(c, "", "unknown element <" + tag + "> in a file definition", "use <file> and <file_group>");
    }
  }
}

// XIOS's calendar: <calendar type= start_date= time_origin=> (XIOS 2), or calendar_type= and
// the dates on the <context> (XIOS 1). NEMO sets its calendar from Fortran instead.
void XiosReader::read_calendar(pugi::xml_node e, bool context) {
  static const std::map<std::string, std::string> cf = {
      {"gregorian", "gregorian"}, {"julian", "julian"}, {"noleap", "noleap"},
      {"allleap", "all_leap"},    {"d360", "360_day"},  {"proleptic_gregorian", "proleptic_gregorian"}};
  bool read = false;
  for (const pugi::xml_attribute a : e.attributes()) {
    const std::string k = a.name();
    if (context && (k == "id" || k == "src")) continue;
    if (k == (context ? "calendar_type" : "type")) {
      const auto it = cf.find(lower(trim(a.value())));
      if (it == cf.end())
        fail(e, k, "calendar '" + std::string(a.value()) + "' is not supported",
             "use Gregorian, Julian, NoLeap, AllLeap or D360");
      cfg_.calendar = it->second;
      read = true;
    } else if (k == "start_date") {
      cfg_.reference_time = trim(a.value());
      read = true;
    } else if (k == "time_origin") {
      if (trim(a.value()) != trim(e.attribute("start_date").value()))
        warn(e, k, "estuary's time axis counts from start_date (the dates written are the same)");
    } else {
      warn(e, k,
           context ? "context attribute not used by estuary (server deployment)"
                   : "calendar attribute not used by estuary");
    }
  }
  if (!read) return;
  try {
    CalendarClock check(cfg_.calendar, cfg_.reference_time);
  } catch (const Error& err) {
    fail(e, "start_date", err.fault(), err.fix());
  }
}

void XiosReader::read_context(pugi::xml_node ctx) {
  read_calendar(ctx, true);
  Attrs no_attrs;
  auto children = [&](pugi::xml_node c, auto&& self) -> void {
    const Deeper guard(*this, c);
    for (pugi::xml_node e : c.children()) {
      if (e.type() != pugi::node_element) continue;
      const std::string tag = e.name();
      if (tag == "field_definition") {
        check_attrs(e, true);
        const pugi::xml_node inc = included(e);
        Attrs a;
        if (inc) {
          check_attrs(inc, true);
          a = own_attrs(inc, a);
        }
        a = own_attrs(e, a);
        a.erase("id");
        if (inc) read_field_definition(inc, a, {});
        read_field_definition(e, a, {});
      } else if (tag == "file_definition") {
        check_attrs(e, false);
        const pugi::xml_node inc = included(e);
        Attrs a;
        if (inc) {
          check_attrs(inc, false);
          a = own_attrs(inc, a);
        }
        a = own_attrs(e, a);
        a.erase("id");
        if (inc) read_file_definition(inc, a);
        read_file_definition(e, a);
      } else if (tag == "variable_definition" || tag == "variable_group") {
        const pugi::xml_node inc = included(e);
        if (inc) self(inc, self);
        self(e, self);
      } else if (tag == "variable") {
        const pugi::xml_attribute id = e.attribute("id");
        if (id) info_.variables[id.value()] = trim(e.text().get());
      } else if (tag == "calendar") {
        read_calendar(e, false);
      } else if (tag == "axis_definition" || tag == "domain_definition" || tag == "grid_definition") {
        // Grids are the model's (def_grid); these are read only for a field that writes a zoom or
        // levels of its field's grid (map_grid), or interpolates it (interpolation), when the
        // files are there.
        grid_def_roots_.push_back(e);
      } else if (tag == "scalar_definition" || tag == "pool_definition" || tag == "service_definition") {
        // Not opened.
      } else {
        fail(e, "", "unknown element <" + tag + "> in a context");
      }
    }
  };
  children(ctx, children);
}

// The fields of a file, in order: its <field>s and those of its <field_group>s (their
// attributes below the fields' own; group_ref="G" brings the fields of field_definition group G).
void XiosReader::collect_file_fields(pugi::xml_node n, const Attrs& inherited, std::vector<DefField>& out) {
  const Deeper guard(*this, n);
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    const std::string tag = c.name();
    if (tag == "field") {
      check_attrs(c, true);
      out.push_back({c, own_attrs(c, inherited)});
    } else if (tag == "field_group") {
      check_attrs(c, true);
      Attrs a = own_attrs(c, inherited);
      a.erase("id");
      a.erase("group_ref");
      if (const pugi::xml_attribute g = c.attribute("group_ref")) {
        const auto it = def_groups_.find(g.value());
        if (it == def_groups_.end())
          fail(c, "group_ref", "no field group '" + std::string(g.value()) + "' in the field definition",
               "name a <field_group id=...> of the field_definition");
        for (const DefField& d : it->second) {
          DefField copy{d.node, {}};
          if (d.node.attribute("id")) {  // a defined field: the file's field refers to it
            copy.attrs = a;
            copy.attrs["field_ref"] = Attr{d.node.attribute("id").value(), c};
          } else {  // a field of the group that refers to another itself: its attributes over the group's
            copy.attrs = d.attrs;
            for (const auto& [k, v] : a)
              if (!copy.attrs.count(k)) copy.attrs[k] = v;
          }
          out.push_back(std::move(copy));
        }
      }
      collect_file_fields(c, a, out);
    } else if (tag == "variable" || tag == "variable_group") {
      warn(c, "", "<" + tag + "> in a file: estuary writes no extra attributes");
    } else {
      fail(c, "", "unknown element <" + tag + "> in a file", "use <field> and <field_group>");
    }
  }
}

void XiosReader::read_file(pugi::xml_node n, const Attrs& attrs) {
  auto has = [&](const char* k) { return attrs.count(k) > 0; };
  // Files that are not written: enabled="false", and XIOS's input files.
  if (has("enabled") && !boolean(attrs.at("enabled"), "enabled")) return;
  if (has("mode") && trim(attrs.at("mode").value) != "write") {
    if (trim(attrs.at("mode").value) != "read")
      fail(attrs.at("mode").at, "mode", "unknown mode '" + attrs.at("mode").value + "'");
    warn(n, "mode", "a file XIOS reads: estuary writes output only (io::Reader reads files); left out");
    return;
  }
  // The file's attributes: those estuary warns about or refuses, wherever they were set.
  for (const auto& [k, v] : attrs) {
    const AttrRule* r = file_rule(k);
    if (r && r->use == Use::warn) warn(v.at, k, r->why);
    if (r && r->use == Use::refuse) fail(v.at, k, r->why);
  }
  FileConfig fc;
  fc.name = file_name(attrs, n);
  fc.format = Format::netcdf4;  // XIOS writes HDF5 (netcdf4, or netcdf4_classic: the same data)
  if (has("format")) {
    const std::string f = trim(attrs.at("format").value);
    if (f != "netcdf4" && f != "netcdf4_classic")
      fail(attrs.at("format").at, "format", "unknown format '" + f + "'", "use netcdf4 or netcdf4_classic");
  }
  if (has("type")) {
    const std::string t = trim(attrs.at("type").value);
    if (t == "multiple_file")
      warn(attrs.at("type").at, "type", "estuary writes one file (XIOS would write one per server)");
    else if (t != "one_file")
      fail(attrs.at("type").at, "type", "unknown type '" + t + "'", "use one_file or multiple_file");
  }
  if (!has("output_freq")) fail(n, "output_freq", "a file needs an output_freq", "set it on the file or its group");
  fc.output_freq = duration(attrs.at("output_freq"), "output_freq", true);
  if (has("split_freq")) {
    fc.split_freq = duration(attrs.at("split_freq"), "split_freq", true);
    if (!detail::holds_whole(fc.split_freq, fc.output_freq))
      fail(attrs.at("split_freq").at, "split_freq", "split_freq is not a multiple of output_freq",
           "make every split period hold whole output periods");
    warn(attrs.at("split_freq").at, "split_freq",
         "estuary names split files <name>_<start date>.nc (XIOS: <name>_<start>-<end>.nc)");
  }
  if (has("sync_freq")) duration(attrs.at("sync_freq"), "sync_freq", true);  // estuary commits every record
  const int output_level =
      has("output_level") ? integer(attrs.at("output_level"), "output_level", 0, 1000) : kDefaultOutputLevel;
  std::vector<DefField> fields;
  collect_file_fields(n, {}, fields);
  std::set<std::string> names;
  const Attr* compression = has("compression_level") ? &attrs.at("compression_level") : nullptr;
  period_values_.clear();
  for (const DefField& f : fields) resolve_field(f, fc, output_level, compression, names);
  if (detail::mixes_time_axes(fc)) {
    // XIOS writes instant and averaged fields on two time axes, estuary on one. An instant
    // field whose values are a `@` expression with freq_op = output_freq has one value a period,
    // a value of the period: written as the mean of that one value (the same numbers) on the
    // period's centred time with bounds.
    for (FieldConfig& x : fc.fields)
      if (x.operation == Operation::instant && period_values_.count(x.variable())) {
        x.operation = Operation::average;
        warn(n, "", "instant field '" + x.variable() +
                        "' (a @ expression over each output period) is written on the file's time axis of periods "
                        "with time_bnds, as the mean of its one value a period; XIOS writes it on time_instant");
      }
  }
  if (fc.fields.empty()) {
    warn(n, "", "no field to write: the file is left out");
    return;
  }
  if (static_cast<long long>(fc.fields.size()) > estuary::detail::kMaxFieldsPerFile)
    fail(n, "",
         std::to_string(fc.fields.size()) + " fields, more than the " +
             std::to_string(estuary::detail::kMaxFieldsPerFile) + " estuary writes to one file",
         "split them over several files");
  if (detail::mixes_time_axes(fc))
    fail(n, "", "file mixes instant fields with averaged/min/max/accumulated ones",
         "put them in two files (XIOS writes two time axes; estuary one)");
  for (const FileConfig& other : cfg_.files)
    if (other.name == fc.name)
      fail(n, "name", "file name '" + fc.name + "' is used twice", "give the files different names (or name_suffix)");
  if (static_cast<long long>(cfg_.files.size()) >= estuary::detail::kMaxOutputFiles)
    fail(n, "",
         "more than the " + std::to_string(estuary::detail::kMaxOutputFiles) +
             " files estuary writes from one configuration");
  cfg_.files.push_back(std::move(fc));
}

// One field of a file: follows field_ref to the model's field, taking the attributes the
// field does not set from each referenced field in turn (XIOS's reference inheritance).
// Returns false when the field is not written (disabled, above output_level, or skipped).
bool XiosReader::resolve_field(const DefField& f, FileConfig& fc, int output_level, const Attr* file_compression,
                               std::set<std::string>& names) {
  Attrs a = f.attrs;
  // The chain: this field, then each field it refers to; grids as each sets them.
  struct Link {
    pugi::xml_node node;
    std::string grid;  // grid_ref|domain_ref|axis_ref|scalar_ref as set on it or its groups ("" none)
    bool expr;
  };
  auto grid_of = [](const Attrs& x) {
    std::string g;
    for (const char* k : {"grid_ref", "domain_ref", "axis_ref", "scalar_ref"}) {
      auto it = x.find(k);
      g += (it == x.end() ? std::string() : trim(it->second.value)) + "|";
    }
    return g == "||||" ? std::string() : g;
  };
  auto has_expr = [](const DefField& d) { return d.attrs.count("expr") > 0 || !trim(d.node.text().get()).empty(); };
  // The attribute that sets a link's grid (grid_of's order), for messages; it may come from the
  // element's group rather than the element itself.
  auto grid_attr = [](const std::string& spec) {
    const char* names[] = {"grid_ref", "domain_ref", "axis_ref", "scalar_ref"};
    std::size_t at = 0;
    for (const char* n : names) {
      const std::size_t bar = spec.find('|', at);
      if (bar != at && at < spec.size()) return std::string(n);
      at = bar == std::string::npos ? spec.size() : bar + 1;
    }
    return std::string("grid_ref");
  };
  std::vector<Link> chain{{f.node, grid_of(f.attrs), has_expr(f)}};
  std::string source;
  std::set<std::string> seen;
  std::string ref = f.attrs.count("field_ref") ? trim(f.attrs.at("field_ref").value) : "";
  pugi::xml_node ref_at = f.attrs.count("field_ref") ? f.attrs.at("field_ref").at : f.node;
  if (ref.empty()) {
    if (!f.node.attribute("id"))
      fail(f.node, "field_ref", "a file's field needs a field_ref or an id",
           "refer to a field of the field_definition");
    source = f.node.attribute("id").value();
    // XIOS's objects are one per id: a file's <field id="X"> with X in the field_definition is
    // that field (its attributes given here override), as field_ref="X" would be.
    const auto def = defs_.find(source);
    if (def != defs_.end() && def->second.node != f.node) {
      ref = source;
      ref_at = f.node;
    }
  }
  while (!ref.empty()) {
    if (!seen.insert(ref).second) fail(ref_at, "field_ref", "field_ref '" + ref + "' refers back to itself");
    const auto it = defs_.find(ref);
    if (it == defs_.end())
      fail(ref_at, "field_ref", "no field '" + ref + "' in the field definition",
           "define <field id=\"" + ref + "\"> in a field_definition, or correct the reference");
    const DefField& d = it->second;
    for (const auto& [k, v] : d.attrs)
      if (k != "id" && k != "field_ref" && !a.count(k)) a[k] = v;
    chain.push_back({d.node, grid_of(d.attrs), has_expr(d)});
    source = ref;
    ref = d.attrs.count("field_ref") ? trim(d.attrs.at("field_ref").value) : "";
    ref_at = d.attrs.count("field_ref") ? d.attrs.at("field_ref").at : d.node;
  }
  // Disabled fields and fields above the file's output_level are not written (XIOS's rule).
  if (a.count("enabled") && !boolean(a.at("enabled"), "enabled")) return false;
  const int level = a.count("level") ? integer(a.at("level"), "level", 0, 1000) : kDefaultFieldLevel;
  if (level > output_level) return false;

  // The variable's name: `name` (the field's, or inherited through field_ref), else the id of
  // the chain's root, the model's field (XIOS's nc4 output: name, else the base reference's id).
  const std::string var = a.count("name") ? trim(a.at("name").value) : source;

  // What estuary cannot do as XIOS does: an error, or with skip_unsupported, the field left out.
  auto unsupported = [&](pugi::xml_node at, const std::string& attr, const std::string& why, const std::string& fix) {
    if (!opt_.skip_unsupported) fail(at, attr, why, fix);
    warn(at, attr, why + "; variable '" + var + "' of file " + fc.name + " left out");
    return false;
  };
  // An expression on the chain: the first one from the file's field takes the data from the
  // fields it names (those further along give attributes only, as in XIOS). On the file's own
  // field it makes a derived field of this file; on a field_definition field, that field is a
  // derived field under its id.
  std::size_t expr_at = chain.size();
  for (std::size_t k = 0; k < chain.size() && expr_at == chain.size(); ++k)
    if (chain[k].expr) expr_at = k;
  FieldConfig expr_fd;  // the file's own expression (expr_at == 0)
  bool period_expr = false;  // the data are a `@` expression's: freq_op is its period, not a sampling
  if (expr_at < chain.size()) {
    const pugi::xml_node en = chain[expr_at].node;
    try {
      if (expr_at == 0) {
        const std::string this_ref = f.attrs.count("field_ref") ? trim(f.attrs.at("field_ref").value) : "";
        resolve_expression(en, expression_text(en), this_ref, expr_fd);
        period_expr = !expr_fd.at.empty();
      } else {
        const std::string id = en.attribute("id").value();
        add_derived(id);
        for (const FieldConfig& d : cfg_.derived)
          if (d.name == id) period_expr = !d.at.empty();
        source = id;
      }
    } catch (const Error& e) {
      // What XIOS would compute but estuary does not (an expression mixing `@` terms with
      // fields at each step): left out with skip_unsupported; other errors are errors.
      const std::string what = e.what();
      if (what.find("mixes `@` terms") == std::string::npos && what.find(kExprGridTransformation) == std::string::npos)
        throw;
      return unsupported(en, en.attribute("expr") ? "expr" : "", e.fault(), e.fix());
    }
  }
  // A field that sets another grid than the field it refers to asks XIOS for a transformation:
  // a zoom (zoom_domain, zoom_axis) or interpolated levels (interpolate_axis) estuary writes too,
  // or an interpolate_domain, which becomes the file's grid; one of them at most; any other is
  // refused.
  FieldConfig view;
  std::string view_origin;
  RegridConfig regrid;
  {
    std::string g;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (it->grid.empty()) continue;
      if (!g.empty() && it->grid != g) {
        const std::string attr = grid_attr(it->grid);
        const std::string what =
            "a grid other than the referenced field's (an XIOS grid transformation) is not supported";
        const bool first = view_origin.empty() && !regrid;
        std::optional<std::string> why =
            first ? map_grid(g, it->grid, view) : std::optional<std::string>("one transformation a field at most");
        if (why) {
          // Not a zoom or levels: an interpolate_domain to a generated rectilinear domain?
          const std::size_t bar = it->grid.find('|'), bar2 = it->grid.find('|', bar + 1);
          std::optional<RegridConfig> r;
          if (first) r = interpolation(it->grid.substr(0, bar), it->grid.substr(bar + 1, bar2 - bar - 1));
          if (!r)
            return unsupported(it->node, attr, why->empty() ? what : what + ": " + *why,
                               "output the field on the grid the model gives it, a zoom of it, levels of its axis, "
                               "or (interpolate_domain) a generated rectilinear domain");
          regrid = *r;
        } else {
          view_origin = where(it->node, attr);
        }
      }
      if (g.empty()) {
        // The grid the chain's root (the model's field) is on: XIOS would transform the model's
        // values if that grid is itself a zoom or an interpolation of another; estuary writes
        // them as the model gives them, so that is refused rather than written differently.
        if (const std::optional<pugi::xml_node> own = own_transformation(it->grid)) {
          const std::string attr = grid_attr(it->grid);
          return unsupported(it->node, attr,
                             "the field's own grid is transformed (" + where(*own) +
                                 "): XIOS would write the transformation, estuary writes the model's values as given",
                             "define the model's field on the untransformed grid and refer to the transformed one "
                             "from the file's field (field_ref with grid_ref)");
        }
      }
      g = it->grid;
    }
  }
  // estuary puts a whole file on one grid (FileConfig::grid); XIOS interpolates field by field.
  if (!fc.fields.empty() && fc.grid.describe() + fc.grid.weights != regrid.describe() + regrid.weights)
    return unsupported(f.node, "grid_ref",
                       "field '" + var + "' is on another grid than the file's earlier fields (" +
                           (regrid ? regrid.describe() : "the model's") + " against " +
                           (fc.grid ? fc.grid.describe() : "the model's") + ")",
                       "put the fields of each grid in a file of their own");
  if (fc.fields.empty()) fc.grid = regrid;
  for (const auto& [k, v] : a) {
    const AttrRule* r = field_rule(k);
    if (r && r->use == Use::refuse) return unsupported(v.at, k, r->why, "remove the attribute");
  }
  if (a.count("freq_offset")) {
    const std::string o = trim(a.at("freq_offset").value);
    if (o != "0ts" && o != "0s" && o != "0d" && o != "0h")
      return unsupported(a.at("freq_offset").at, "freq_offset",
                         "freq_offset is not supported (estuary samples from time 0)", "remove it");
  }
  // detect_missing_value makes XIOS's temporal operations skip default_value samples; an
  // instant (or once) value has no samples to skip, so there it changes nothing.
  const bool point_op = a.count("operation") && (trim(a.at("operation").value) == "instant" || trim(a.at("operation").value) == "once");
  if (a.count("detect_missing_value") && boolean(a.at("detect_missing_value"), "detect_missing_value") && !point_op)
    return unsupported(a.at("detect_missing_value").at, "detect_missing_value",
                       "detect_missing_value is not supported (estuary's operations leave out masked points only)",
                       "mask the points with the field's or the grid's mask instead");
  if (a.count("grid_path"))
    return unsupported(a.at("grid_path").at, "grid_path", "grid_path (chained grid transformations) is not supported",
                       "remove it");

  FieldConfig fd;
  fd.name = source;
  if (expr_at == 0) {
    // A name of its own for this file's derived field (the model may have a field named `var`).
    fd.name = var + "@" + fc.name;
    fd.expr = expr_fd.expr;
    fd.at = expr_fd.at;
  }
  if (var != fd.name) fd.output_name = var;
  fd.origin = where(f.node);
  if (!a.count("operation"))
    fail(f.node, "operation", "no operation for field '" + var + "' (XIOS requires one too)",
         "set operation on the field, its group or the field_definition");
  {
    const Attr& op = a.at("operation");
    if (!detail::operation_from_name(trim(op.value), fd.operation))
      fail(op.at, "operation", "unknown operation '" + op.value + "'",
           "use instant, average, minimum, maximum, accumulate or once");
  }
  if (a.count("freq_op") && period_expr) {
    // The period of the expression's `@` terms; its values come at each period's end.
    const Frequency s = duration(a.at("freq_op"), "freq_op", true);
    if (!detail::holds_whole(fc.output_freq, s))
      fail(a.at("freq_op").at, "freq_op", "output_freq is not a multiple of freq_op",
           "make every output period hold whole freq_op periods");
    if (expr_at == 0) fd.freq_op = s;
    if (s == fc.output_freq) period_values_.insert(var);
  } else if (a.count("freq_op")) {
    const Frequency s = duration(a.at("freq_op"), "freq_op", true);
    if (s.months > 0) {
      // Samples a month apart: the same as no sampling only for an instant value at each month's end.
      const bool point = fd.operation == Operation::instant || fd.operation == Operation::once;
      if (!(point && s == fc.output_freq))
        return unsupported(a.at("freq_op").at, "freq_op",
                           "freq_op in months is supported only as output_freq of an instant field",
                           "give freq_op in d, h, mi, s or ts");
    } else if (!(opt_.timestep_s > 0 && std::fabs(s.seconds - opt_.timestep_s) <= 1e-9 * s.seconds)) {
      fd.sampling_freq_s = s.seconds;  // every time step (XIOS's default) is estuary's every write
      Frequency sampling;
      sampling.seconds = s.seconds;
      if (!detail::holds_whole(fc.output_freq, sampling))
        fail(a.at("freq_op").at, "freq_op", "output_freq is not a multiple of freq_op",
             "make every output period hold whole freq_op periods");
    }
  }
  if (a.count("prec")) {
    const int p = integer(a.at("prec"), "prec", 1, 8);
    if (p == 4) fd.precision = Precision::f32;
    else if (p == 8) fd.precision = Precision::f64;
    else
      return unsupported(a.at("prec").at, "prec", "prec " + std::to_string(p) + " (integers) is not supported",
                         "use prec 4 (float) or 8 (double)");
  }
  if (a.count("default_value")) {
    const std::string v = trim(a.at("default_value").value);
    double x = 0;
    try {
      x = std::stod(v);
    } catch (const std::exception&) {
      fail(a.at("default_value").at, "default_value", "'" + v + "' is not a number");
    }
    if (x != kFillValue)
      return unsupported(a.at("default_value").at, "default_value",
                         "default_value " + v + " differs from estuary's fill value 1e20", "use 1.e20");
  }
  // compression_level: the field's (own or through field_ref), else the file's, as XIOS's output does.
  if (!a.count("compression_level") && file_compression) a["compression_level"] = *file_compression;
  if (a.count("compression_level")) fd.deflate = integer(a.at("compression_level"), "compression_level", 0, 9);
  if (a.count("unit")) fd.units = a.at("unit").value;
  if (a.count("long_name")) fd.long_name = a.at("long_name").value;
  if (a.count("standard_name")) fd.standard_name = a.at("standard_name").value;
  if (!view_origin.empty()) {
    fd.zoom = view.zoom;
    fd.level_indices = view.level_indices;
    fd.interpolate_levels = view.interpolate_levels;
    fd.zoom_origin = fd.levels_origin = view_origin;
  }
  for (const auto& [k, v] : a) {
    const AttrRule* r = field_rule(k);
    if (r && r->use == Use::warn) warn(v.at, k, r->why);
  }
  if (var.empty()) fail(f.node, "name", "the field's variable name is empty");
  if (!names.insert(var).second)
    fail(f.node, "name", "variable '" + var + "' is written twice to file " + fc.name, "give one of them another name");
  XiosXmlInfo::Field rec;
  rec.file = fc.name;
  rec.variable = var;
  rec.source = source;
  if (a.count("grid_ref")) rec.grid_ref = trim(a.at("grid_ref").value);
  if (a.count("domain_ref")) rec.domain_ref = trim(a.at("domain_ref").value);
  if (a.count("axis_ref")) rec.axis_ref = trim(a.at("axis_ref").value);
  rec.origin = fd.origin;
  info_.fields.push_back(std::move(rec));
  fc.fields.push_back(std::move(fd));
  return true;
}

// ---- expressions ----

std::string XiosReader::expression_text(pugi::xml_node n) {
  if (const pugi::xml_attribute e = n.attribute("expr")) return trim(e.value());
  return trim(n.text().get());
}

void XiosReader::resolve_expression(pugi::xml_node at, const std::string& text, const std::string& this_ref,
                                    FieldConfig& fd) {
  const std::string attr = at.attribute("expr") ? "expr" : "";
  const std::string here = where(at, attr);
  std::map<std::string, std::string> rename;  // a plain name -> the estuary field it stands for
  for (const std::string& v : expression_variables(text, here)) {
    const bool term = v[0] == '@';
    const std::string name = term ? v.substr(1) : v;
    std::string id = name;
    if (name == "this") {
      if (this_ref.empty())
        fail(at, attr, "`this` in an expression of a field without field_ref", "refer to the field `this` stands for");
      id = this_ref;
    }
    // Follow field_ref from `id` to the model's field or to a field with an expression; the
    // operation of a `@` term is the first one met (the named field's own, XIOS's rule). A field
    // on the way that sets another grid would be a grid transformation inside the expression.
    std::string op, grid, target;
    pugi::xml_node grid_at;  // where `grid` was set
    std::set<std::string> seen;
    for (std::string cur = id;;) {
      if (!seen.insert(cur).second) fail(at, attr, "field_ref '" + cur + "' refers back to itself");
      const auto it = defs_.find(cur);
      if (it == defs_.end())
        fail(at, attr, "expression '" + text + "' names '" + cur + "', which is no field of the field definition",
             "define <field id=\"" + cur + "\"> in a field_definition, or correct the expression");
      const DefField& d = it->second;
      if (op.empty() && d.attrs.count("operation")) op = trim(d.attrs.at("operation").value);
      std::string g;
      for (const char* k : {"grid_ref", "domain_ref", "axis_ref", "scalar_ref"})
        if (d.node.attribute(k)) g += std::string(k) + "=" + trim(d.node.attribute(k).value()) + " ";
      if (!g.empty() && !grid.empty() && g != grid)
        fail(at, attr,
             "'" + name + "' in expression '" + text + "' is on " + grid + "(" + where(grid_at) + ") but refers to field '" +
                 cur + "' on " + g + "(" + where(d.node) + "): " + kExprGridTransformation,
             "use fields on the grid of the model's field in expressions");
      if (grid.empty()) grid = g, grid_at = d.node;
      const bool has_expr = !expression_text(d.node).empty();
      if (has_expr || !d.attrs.count("field_ref")) {
        if (has_expr) add_derived(cur);
        target = cur;
        break;
      }
      cur = trim(d.attrs.at("field_ref").value);
    }
    if (term) {
      FieldConfig::AtTerm t;
      t.field = target;
      if (op.empty())
        fail(at, attr, "no operation for '" + v + "' (field '" + id + "') in expression '" + text + "'",
             "set operation on field '" + id + "', its group or the field_definition");
      if (!detail::operation_from_name(op, t.operation) || t.operation == Operation::once)
        fail(at, attr, "operation '" + op + "' of '" + v + "' in expression '" + text + "' is no temporal operation",
             "use instant, average, minimum, maximum or accumulate");
      fd.at[name] = t;
    } else if (target != name) {
      rename[name] = target;
    }
  }
  // Plain names become the fields they stand for (whole names only: "sst" in "sst2" stays).
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto name_char = [&](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '@'; };
    if (!name_char(text[i])) {
      out += text[i++];
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && name_char(text[j])) ++j;
    const std::string tok = text.substr(i, j - i);
    const auto r = rename.find(tok);
    out += r == rename.end() ? tok : r->second;
    i = j;
  }
  fd.expr = out;
  fd.origin = here;
  check_expression(fd, here);  // `@` terms with fields at each step, say
}

void XiosReader::add_derived(const std::string& id) {
  if (!derived_ids_.insert(id).second) return;  // (also ends a cycle; derived_fields names it)
  const DefField& d = defs_.at(id);
  FieldConfig fd;
  fd.name = id;
  const std::string this_ref = d.attrs.count("field_ref") ? trim(d.attrs.at("field_ref").value) : "";
  resolve_expression(d.node, expression_text(d.node), this_ref, fd);
  if (!fd.at.empty() && d.attrs.count("freq_op")) fd.freq_op = duration(d.attrs.at("freq_op"), "freq_op", true);
  if (d.attrs.count("unit")) fd.units = d.attrs.at("unit").value;
  if (d.attrs.count("long_name")) fd.long_name = d.attrs.at("long_name").value;
  if (d.attrs.count("standard_name")) fd.standard_name = d.attrs.at("standard_name").value;
  cfg_.derived.push_back(std::move(fd));
}

// ---- zoom and levels from the axis, domain and grid definitions ----

// The definitions' elements by id (groups and src= files followed; a src= file that is not
// there is passed over: the grids are the model's, these only tell zooms and levels).
void XiosReader::index_grid_defs(pugi::xml_node n) {
  const Deeper guard(*this, n);
  if (const pugi::xml_attribute src = n.attribute("src")) {
    fs::path p(src.value());
    if (p.is_relative()) p = fs::path(file_of(n).path).parent_path() / p;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      if (const pugi::xml_node inc = included(n)) index_grid_defs(inc);
    }
  }
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    const std::string tag = c.name();
    const std::string id = trim(c.attribute("id").value());
    if (tag == "axis" && !id.empty()) axes_[id] = c;
    else if (tag == "domain" && !id.empty()) domains_[id] = c;
    else if (tag == "grid" && !id.empty()) grids_[id] = c;
    else if (tag == "axis_group" || tag == "domain_group" || tag == "grid_group") index_grid_defs(c);
  }
}

void XiosReader::index_grid_defs_once() {
  if (grid_defs_indexed_) return;
  grid_defs_indexed_ = true;
  for (pugi::xml_node r : grid_def_roots_) index_grid_defs(r);
}

XiosReader::GridParts XiosReader::grid_parts(const std::string& spec) {
  index_grid_defs_once();
  std::vector<std::string> ref;  // grid_ref, domain_ref, axis_ref, scalar_ref
  std::size_t at = 0;
  for (int k = 0; k < 4; ++k) {
    const std::size_t bar = spec.find('|', at);
    ref.push_back(spec.substr(at, bar - at));
    at = bar == std::string::npos ? spec.size() : bar + 1;
  }
  GridParts g;
  if (!ref[0].empty()) {
    const auto it = grids_.find(ref[0]);
    if (it == grids_.end()) {
      g.known = false;
      return g;
    }
    for (pugi::xml_node c : it->second.children()) {
      const std::string tag = c.name();
      if (tag == "domain") g.domain = c;
      else if (tag == "axis") g.axis = c;
      else if (tag == "scalar") g.scalar = true, g.scalar_node = c;
    }
    return g;
  }
  g.domain_ref = ref[1];
  g.axis_ref = ref[2];
  g.scalar = !ref[3].empty();
  return g;
}

XiosReader::Walk XiosReader::walk(pugi::xml_node n, const std::string& ref, const char* kind) {
  Walk w;
  const std::string attr = std::string(kind) + "_ref";
  std::map<std::string, pugi::xml_node>& by_id = std::string(kind) == "axis" ? axes_ : domains_;
  std::string next = ref;
  std::set<std::string> seen;
  for (int steps = 0; steps < 100; ++steps) {
    if (!n) {  // follow `next` to its element; an id not defined here is the chain's end
      const auto it = by_id.find(next);
      if (it == by_id.end()) {
        w.root = next;
        return w;
      }
      n = it->second;
    }
    for (pugi::xml_node c : n.children()) {
      // Elements that describe the grid itself, not a transformation of the values written.
      const std::string tag = c.name();
      if (c.type() != pugi::node_element || tag == "variable" || tag == "generate_rectilinear_domain" ||
          tag == "compute_connectivity_domain")
        continue;
      w.transforms.push_back(c);
      w.holders.push_back(n);
    }
    next = trim(n.attribute(attr.c_str()).value());
    if (next.empty()) {
      w.root = trim(n.attribute("id").value());
      return w;
    }
    if (!seen.insert(next).second) fail(n, attr, attr + " '" + next + "' refers back to itself");
    n = {};
  }
  fail(n, attr, "a chain of more than 100 " + attr + " references");
}

namespace {

// XIOS's array syntax "(0,2)[10 50 100]", or the values alone: the numbers.
std::vector<double> xios_array(const std::string& text, bool& ok) {
  std::string s = text;
  const std::size_t open = s.find('['), close = s.rfind(']');
  if (open != std::string::npos && close != std::string::npos && close > open) s = s.substr(open + 1, close - open - 1);
  for (char& c : s)
    if (c == ',') c = ' ';
  std::istringstream in(s);
  std::vector<double> v;
  double x = 0;
  while (in >> x) v.push_back(x);
  ok = in.eof() && !v.empty();
  return v;
}

}  // namespace

std::optional<pugi::xml_node> XiosReader::own_transformation(const std::string& spec) {
  const GridParts p = grid_parts(spec);
  if (!p.known) return std::nullopt;
  // A <scalar> made by a transformation (reduce_axis, reduce_domain, extract_axis, ...): every
  // element inside a scalar is one.
  if (p.scalar_node)
    for (pugi::xml_node c : p.scalar_node.children())
      if (c.type() == pugi::node_element) return c;
  for (const char* kind : {"domain", "axis"}) {
    const bool axis = std::string(kind) == "axis";
    const pugi::xml_node n = axis ? p.axis : p.domain;
    const std::string& ref = axis ? p.axis_ref : p.domain_ref;
    if (!n && ref.empty()) continue;
    const Walk w = walk(n, ref, kind);
    if (!w.transforms.empty()) return w.transforms[0];
  }
  return std::nullopt;
}

std::optional<std::string> XiosReader::map_grid(const std::string& base, const std::string& target, FieldConfig& view) {
  const GridParts b = grid_parts(base), t = grid_parts(target);
  if (!b.known || !t.known) return std::string();  // the definitions are not here: nothing to read
  if (b.scalar || t.scalar) return std::string("a grid with a scalar");
  auto integer_attr = [&](pugi::xml_node n, const char* k, long long dflt) -> long long {
    const pugi::xml_attribute a = n.attribute(k);
    if (!a) return dflt;
    return integer(Attr{a.value(), n}, k, 0, std::numeric_limits<int>::max());
  };
  // The horizontal part: the same domain, at most one zoom_domain (or XIOS 3's extract_domain).
  const bool bd = b.domain || !b.domain_ref.empty(), td = t.domain || !t.domain_ref.empty();
  if (bd != td) return std::string("one grid has a domain and the other not");
  if (bd) {
    const Walk wb = walk(b.domain, b.domain_ref, "domain"), wt = walk(t.domain, t.domain_ref, "domain");
    if (!wb.transforms.empty())
      return "the referenced field's domain is itself transformed (" + where(wb.transforms[0]) + ")";
    if (wb.root != wt.root) return "domain '" + wt.root + "' is not a zoom of domain '" + wb.root + "'";
    for (pugi::xml_node c : wt.transforms) {
      const std::string tag = c.name();
      if (tag != "zoom_domain" && tag != "extract_domain") return "<" + tag + "> is not supported (" + where(c) + ")";
      if (view.zoom.kind != FieldConfig::Zoom::Kind::none) return "two zooms of one domain (" + where(c) + ")";
      for (const pugi::xml_attribute a : c.attributes()) {
        const std::string k = a.name();
        if (k != "ibegin" && k != "ni" && k != "jbegin" && k != "nj" && k != "id")
          fail(c, k, "unknown attribute of <" + tag + ">", "estuary reads ibegin, ni, jbegin and nj");
      }
      view.zoom.kind = FieldConfig::Zoom::Kind::index;
      view.zoom.i0 = integer_attr(c, "ibegin", 0);
      view.zoom.j0 = integer_attr(c, "jbegin", 0);
      const long long ni = integer_attr(c, "ni", -1), nj = integer_attr(c, "nj", -1);
      if (ni == 0 || nj == 0) fail(c, ni == 0 ? "ni" : "nj", "an empty zoom");
      view.zoom.i1 = ni < 0 ? -1 : view.zoom.i0 + ni - 1;
      view.zoom.j1 = nj < 0 ? -1 : view.zoom.j0 + nj - 1;
    }
  }
  // The vertical part: the same axis, at most one zoom_axis or interpolate_axis (order 1).
  const bool ba = b.axis || !b.axis_ref.empty(), ta = t.axis || !t.axis_ref.empty();
  if (ba != ta) return std::string("one grid has an axis and the other not");
  pugi::xml_node axis_at;  // the axis transformation read
  if (ba) {
    const Walk wb = walk(b.axis, b.axis_ref, "axis"), wt = walk(t.axis, t.axis_ref, "axis");
    if (!wb.transforms.empty())
      return "the referenced field's axis is itself transformed (" + where(wb.transforms[0]) + ")";
    if (wb.root != wt.root) return "axis '" + wt.root + "' is not made from axis '" + wb.root + "'";
    if (wt.transforms.size() > 1) return "more than one transformation of an axis (" + where(wt.transforms[1]) + ")";
    for (std::size_t k = 0; k < wt.transforms.size(); ++k) {
      const pugi::xml_node c = wt.transforms[k];
      const std::string tag = c.name();
      axis_at = c;
      if (tag == "zoom_axis" || tag == "extract_axis") {
        if (c.attribute("index"))
          return "<" + tag + " index=...> is not supported (" + where(c, "index") + "): give begin and n";
        if (!c.attribute("n")) return "<" + tag + "> without n (" + where(c) + ")";
        const long long b0 = integer_attr(c, "begin", 0), n = integer_attr(c, "n", 0);
        if (n == 0) fail(c, "n", "an empty zoom of an axis");
        for (long long i = 0; i < n; ++i) view.level_indices.push_back(b0 + i);
      } else if (tag == "interpolate_axis") {
        const std::string type = trim(c.attribute("type").value());
        if (!type.empty() && type != "polynomial")
          return "interpolate_axis type '" + type + "' is not supported (" + where(c, "type") + ")";
        if (trim(c.attribute("order").value()) != "1")
          return "interpolate_axis of order other than 1 is not supported (" + where(c, "order") +
                 "): give order=\"1\"";
        if (c.attribute("coordinate") || c.attribute("coordinate_src") || c.attribute("coordinate_dst"))
          return "interpolation in another field's values (coordinate) is not supported (" + where(c, "coordinate") +
                 ")";
        const pugi::xml_node axis = wt.holders[k];
        bool ok = false;
        view.interpolate_levels.values = xios_array(axis.attribute("value").value(), ok);
        if (!ok) fail(axis, "value", "an interpolated axis needs its values", "give value=\"(0,N-1)[v0 v1 ...]\"");
        view.interpolate_levels.extrapolate = true;  // XIOS extrapolates from the end levels
      } else {
        return "<" + tag + "> is not supported (" + where(c) + ")";
      }
    }
  }
  if (axis_at) {
    try {
      detail::check_levels(view, where(axis_at));
    } catch (const Error& e) {
      return e.what();
    }
  }
  return std::nullopt;
}

std::optional<RegridConfig> XiosReader::interpolation(const std::string& grid_ref, const std::string& domain_ref) {
  index_grid_defs_once();
  // The domain: the field's domain_ref, or the (first) domain of its grid_ref's grid, which may
  // be written in place (with its own children) or refer to the definition's.
  pugi::xml_node dom;
  std::string dref = domain_ref;
  if (!grid_ref.empty()) {
    const auto g = grids_.find(grid_ref);
    if (g == grids_.end()) return std::nullopt;
    const pugi::xml_node d = g->second.child("domain");
    if (!d) return std::nullopt;
    if (d.first_child()) dom = d;
    else dref = d.attribute("domain_ref").value();
  }
  if (!dom && !dref.empty()) {
    const auto d = domains_.find(dref);
    if (d == domains_.end()) return std::nullopt;
    dom = d->second;
  }
  const pugi::xml_node in = dom ? dom.child("interpolate_domain") : pugi::xml_node();
  if (!in) return std::nullopt;
  for (pugi::xml_node c : dom.children())
    if (c.type() == pugi::node_element && std::string(c.name()) != "interpolate_domain" &&
        std::string(c.name()) != "generate_rectilinear_domain")
      fail(c, "", std::string("<") + c.name() + "> with <interpolate_domain>: chained domain transformations are not supported",
           "interpolate to a generated rectilinear domain alone");
  // The target: a global rectilinear domain that XIOS generates from ni_glo x nj_glo.
  const std::string type = trim(dom.attribute("type").value());
  const pugi::xml_node gen = dom.child("generate_rectilinear_domain");
  if (type != "rectilinear" || !gen || !dom.attribute("ni_glo") || !dom.attribute("nj_glo"))
    fail(dom, type != "rectilinear" ? "type" : !gen ? "" : "ni_glo",
         "the target of <interpolate_domain> must be a type=\"rectilinear\" domain with ni_glo, nj_glo and "
         "<generate_rectilinear_domain/> for estuary to build it",
         "give those, or write the file in YAML with grid: {target: {scrip: grid.nc}}");
  for (const pugi::xml_attribute a : gen.attributes())
    fail(gen, a.name(), "a regional generated domain is not supported (estuary's target is global)", "remove it");
  const int ni = integer(Attr{dom.attribute("ni_glo").value(), dom}, "ni_glo", 1, 1 << 20);
  const int nj = integer(Attr{dom.attribute("nj_glo").value(), dom}, "nj_glo", 1, 1 << 20);
  RegridConfig r;
  r.target = RegridConfig::Target::recipe;
  r.grid = "lonlat:" + std::to_string(ni) + "x" + std::to_string(nj);
  r.method = RegridConfig::Method::conservative;
  r.order = 2;  // XIOS's default
  r.destarea = true;  // renormalize="false", XIOS's default
  r.origin = where(in);
  for (const pugi::xml_attribute a : in.attributes()) {
    const std::string k = a.name();
    const Attr v{a.value(), in};
    if (k == "order") r.order = integer(v, k, 1, 2);
    else if (k == "renormalize") r.destarea = !boolean(v, k);
    else if (k == "weight_filename") r.weights = trim(a.value());
    else if (k == "mode" || k == "write_weight" || k == "read_write_convention" || k == "use_area") {
      // estuary's cache: read when it matches, written when generated (XIOS's read_or_compute)
    } else if (k == "quantity" && !boolean(v, k)) {
    } else if (k == "detect_missing_value" && !boolean(v, k)) {
    } else {
      fail(in, k, "interpolate_domain attribute not supported by estuary (it changes the values written)",
           "remove it");
    }
  }
  warn(dom, "", "the target is estuary's lonlat:" + std::to_string(ni) + "x" + std::to_string(nj) +
                    " (CDO's r" + std::to_string(ni) + "x" + std::to_string(nj) +
                    ": centres at longitude 0, 360/ni, ... and at the middles of nj latitude bands)");
  return r;
}

OutputConfig XiosReader::read(const std::string& path) {
  cfg_.source = path;
  const XmlFile& top = load(path, {}, nullptr);
  pugi::xml_node root = top.doc.document_element();
  std::vector<pugi::xml_node> contexts;
  if (std::string(root.name()) == "context") {
    contexts.push_back(root);
  } else if (std::string(root.name()) == "simulation") {
    for (pugi::xml_node c : root.children("context")) contexts.push_back(c);
  } else {
    fail(root, "", std::string("the root element is <") + root.name() + ">",
         "give an iodef.xml (<simulation>) or a <context> file");
  }
  std::vector<std::string> ids;
  for (pugi::xml_node c : contexts) ids.push_back(c.attribute("id").value());
  std::string want = opt_.context;
  // <context id="xios"> holds XIOS's own settings (buffer sizes, info levels), no model output:
  // a model context besides it is the one to read.
  std::vector<std::string> models;
  for (const std::string& id : ids)
    if (id != "xios") models.push_back(id);
  if (want.empty()) {
    if (std::find(ids.begin(), ids.end(), "nemo") != ids.end()) want = "nemo";
    else if (models.size() == 1) want = models[0];
    else if (ids.size() == 1) want = ids[0];
    else {
      std::string list;
      for (const auto& i : ids) list += (list.empty() ? "" : ", ") + i;
      fail(root, "", "the file has " + std::to_string(ids.size()) + " contexts (" + list + ")",
           "say which to read (XiosXmlOptions::context; Python context=)");
    }
  }
  const auto at = std::find(ids.begin(), ids.end(), want);
  if (at == ids.end()) {
    std::string list;
    for (const auto& i : ids) list += (list.empty() ? "" : ", ") + i;
    fail(root, "", "no context '" + want + "' (there are: " + list + ")", "name one of them");
  }
  pugi::xml_node ctx = contexts[static_cast<std::size_t>(at - ids.begin())];
  info_.context = want;
  if (const pugi::xml_node inc = included(ctx)) read_context(inc);
  read_context(ctx);
  if (cfg_.files.empty()) {
    // Under skip_unsupported the files may be empty because their fields were left out: say why
    // here, where the warnings would otherwise be lost with the error.
    std::string left;
    int n_left = 0;
    for (const std::string& w : info_.warnings)
      if (w.find("; variable '") != std::string::npos && n_left++ < 3) left += (left.empty() ? "" : "; ") + w;
    throw Error("no file to write in context '" + want + "'" +
                    (n_left ? " (" + std::to_string(n_left) + " field(s) left out as not supported, e.g. " + left + ")" : ""),
                path, "enable a <file> with fields (enabled, level <= output_level)");
  }
  // Only the field_definition expressions the files use, directly or through other expressions
  // (one met in a field left out must not ask the model for its fields).
  std::set<std::string> used;
  std::vector<std::string> todo;
  auto use = [&](const FieldConfig& x) {
    if (!x.expr.empty())
      for (const std::string& v : expression_variables(x.expr, x.origin))
        todo.push_back(v[0] != '@' ? v : x.at.count(v.substr(1)) ? x.at.at(v.substr(1)).field : v.substr(1));
    todo.push_back(x.name);
  };
  for (const FileConfig& f : cfg_.files)
    for (const FieldConfig& x : f.fields) use(x);
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    if (!used.insert(n).second) continue;
    for (const FieldConfig& d : cfg_.derived)
      if (d.name == n) use(d);
  }
  std::erase_if(cfg_.derived, [&](const FieldConfig& d) { return !used.count(d.name); });
  derived_fields(cfg_);  // expressions that use each other in a cycle, named at their element
  return cfg_;
}

}  // namespace

OutputConfig OutputConfig::from_xios_xml(const std::string& path, const XiosXmlOptions& options, XiosXmlInfo* info) {
  XiosXmlInfo local;
  XiosXmlInfo& out = info ? *info : local;
  out = XiosXmlInfo{};
  XiosReader reader(options, out);
  OutputConfig c = reader.read(path);
  if (!info)
    for (const std::string& w : out.warnings) std::cerr << "estuary: warning: " << w << "\n";
  return c;
}

}  // namespace estuary::io
