// The output configuration in YAML: the XIOS iodef.xml concepts (files with an output
// frequency, fields with a temporal operation and a precision) in the `output:` section of
// estuary's configuration file (config/yaml_file.hpp: the file may hold the coupler's sections
// too). Every error names the file, the line and the key at fault.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>
#include <utility>

#include "common/cf_calendar.hpp"
#include "common/checked.hpp"
#include "config/yaml_file.hpp"
#include "io/config_checks.hpp"
#include "io/config_zoom.hpp"
#include "estuary/io.hpp"
#include "io/derived.hpp"
#include "io/regrid.hpp"

namespace estuary::io {

const char* name_of(Operation op) {
  switch (op) {
    case Operation::instant: return "instant";
    case Operation::average: return "average";
    case Operation::minimum: return "minimum";
    case Operation::maximum: return "maximum";
    case Operation::accumulate: return "accumulate";
    case Operation::once: return "once";
  }
  return "?";
}

const char* name_of(Mode m) { return m == Mode::server ? "server" : "serverless"; }

double parse_duration(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double scale = 0;
  if (used == 0) scale = 0;
  else if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "min" || unit == "mi") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  if (scale == 0 || !(v > 0) || !std::isfinite(v))
    throw Error("bad duration '" + text + "'", where,
                "write a positive number with an optional unit s, min, h or d, e.g. 6h");
  return v * scale;
}

Frequency parse_frequency(const std::string& text, const std::string& where) {
  // XIOS's calendar units: "mo" months, "y" years (of 12 months).
  for (const auto& [unit, months] : {std::pair<std::string, int>{"mo", 1}, {"y", 12}}) {
    if (text.size() <= unit.size() || text.compare(text.size() - unit.size(), unit.size(), unit) != 0) continue;
    const std::string n = text.substr(0, text.size() - unit.size());
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != n.size() || v <= 0 || v > 12000)
      throw Error("bad duration '" + text + "'", where, "write a whole, positive number of months or years, e.g. 1mo, 3mo, 1y");
    Frequency f;
    f.months = static_cast<int>(v) * months;
    return f;
  }
  Frequency f;
  f.seconds = parse_duration(text, where);
  return f;
}

namespace detail {

bool holds_whole(const Frequency& big, const Frequency& small) {
  auto divides = [](double a, double b) {
    const double r = std::fmod(a, b);
    return r <= 1e-9 * a || b - r <= 1e-9 * a;
  };
  if (big.months > 0) return small.months > 0 ? big.months % small.months == 0 : divides(86400.0, small.seconds);
  return small.months == 0 && divides(big.seconds, small.seconds);
}

bool operation_from_name(const std::string& text, Operation& op) {
  for (Operation o : {Operation::instant, Operation::average, Operation::minimum, Operation::maximum,
                      Operation::accumulate, Operation::once})
    if (text == name_of(o)) {
      op = o;
      return true;
    }
  return false;
}

bool mixes_time_axes(const FileConfig& file) {
  bool inst = false, period = false;
  for (const FieldConfig& fd : file.fields) {
    if (fd.operation == Operation::instant) inst = true;
    else if (fd.operation != Operation::once) period = true;
  }
  return inst && period;
}

}  // namespace detail

namespace {

using estuary::detail::config::YamlFile;
using detail::holds_whole;

// The `output:` section's values (the file and the line of an error come from YamlFile, the
// key from the path given).
int positive_int(const YamlFile& doc, const YAML::Node& n, const std::string& path) {
  const std::string s = doc.scalar(n, path);
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 1 || v > 1 << 20) doc.fail(n, path, "expected a positive integer, got '" + s + "'");
  return static_cast<int>(v);
}

Format format(const YamlFile& doc, const YAML::Node& n, const std::string& path) {
  const std::string s = doc.scalar(n, path);
  if (s == "cdf5") return Format::cdf5;
  if (s == "netcdf4") return Format::netcdf4;
  doc.fail(n, path, "unknown format '" + s + "'", "use cdf5 (PnetCDF) or netcdf4 (HDF5)");
}

// A derived field's expression keys of entry `v` at `q` into fd: expr (its syntax checked now,
// its variables against the model's fields at end_def, where errors name this place), freq_op
// and at (the period and the operations of its `@` terms).
void read_expression(const YamlFile& doc, const YAML::Node& v, const std::string& q, FieldConfig& fd) {
  const std::string key_expr = q + ".expr", key_freq = q + ".freq_op", key_at = q + ".at";
  bool terms = false;
  if (const YAML::Node x = v["expr"]) {
    fd.expr = doc.scalar(x, key_expr);
    fd.origin = doc.where(x, key_expr);
    for (const std::string& name : expression_variables(fd.expr, fd.origin)) terms = terms || name[0] == '@';
  }
  if (const YAML::Node x = v["freq_op"]) {
    if (!terms)
      doc.fail(x, key_freq, "freq_op without `@` terms in an expr",
               "freq_op is the period of the expression's @name terms; to sample a field, use sampling_freq");
    fd.freq_op = parse_frequency(doc.scalar(x, key_freq), doc.where(x, key_freq));
  }
  if (const YAML::Node x = v["at"]) {
    if (!terms) doc.fail(x, key_at, "`at` without `@` terms in an expr", "remove it, or write @name terms in expr");
    if (!x.IsMap())
      doc.fail(x, key_at, "`at` must map each @ term's name to an operation or to {field, operation}",
               "e.g. at: {sstmax: {field: sst, operation: maximum}, e3t: average}");
    for (const auto& kv : x) {
      const std::string name = doc.scalar(kv.first, key_at);
      const std::string k = key_at + "." + name;
      FieldConfig::AtTerm t;
      YAML::Node op = kv.second;
      if (kv.second.IsMap()) {
        doc.keys(kv.second, k, {"field", "operation"});
        if (const YAML::Node f = kv.second["field"]) t.field = doc.scalar(f, k + ".field");
        op = kv.second["operation"];
      }
      if (op) {
        const std::string o = doc.scalar(op, k);
        if (!detail::operation_from_name(o, t.operation) || t.operation == Operation::once)
          doc.fail(op, k, "unknown operation '" + o + "' for a @ term",
                   "use instant, average, minimum, maximum or accumulate");
      }
      fd.at[name] = t;
    }
  }
}

OutputConfig parse(const YamlFile& doc) {
  const YAML::Node& root = doc.root();  // const: lookups of absent keys must not add them
  OutputConfig c;
  c.source = doc.source();
  if (!root.IsMap() || !root["output"])
    doc.fail(root, "output", "no `output:` section", "put the I/O settings under `output:`");
  doc.check_sections();  // the coupler's sections may be there too
  const YAML::Node o = root["output"];
  if (!o.IsMap()) doc.fail(o, "output", "`output` must be a map");
  doc.keys(o, "output", {"mode", "writers", "buffer_records", "write_bandwidth", "directory", "calendar", "reference_time",
                         "catch_sigterm", "format", "files", "title", "institution", "source", "comment", "history",
                         "derived"});
  auto text = [&](const YAML::Node& n, const char* key, std::string& to) {
    if (const YAML::Node v = n[key]) to = doc.scalar(v, std::string("output.") + key);
  };
  text(o, "title", c.title);
  text(o, "institution", c.institution);
  text(o, "source", c.source_attribute);
  text(o, "comment", c.comment);
  text(o, "history", c.history);
  if (const YAML::Node v = o["mode"]) {
    const std::string m = doc.scalar(v, "output.mode");
    try {
      c.mode = from_name<Mode>(m);  // the core's names (estuary/names.hpp)
    } catch (const Error& e) {
      doc.fail(v, "output.mode", e.fault(), e.fix());
    }
  }
  // Absent or `auto`: Output chooses them (io/tune.cpp).
  auto count_or_auto = [&](const char* key, int& to) {
    const std::string path = std::string("output.") + key;
    if (const YAML::Node v = o[key]) to = doc.scalar(v, path) == "auto" ? 0 : positive_int(doc, v, path);
  };
  count_or_auto("writers", c.writers);
  count_or_auto("buffer_records", c.buffer_records);
  if (const YAML::Node v = o["write_bandwidth"]) {
    const std::string s = doc.scalar(v, "output.write_bandwidth");
    std::size_t used = 0;
    try {
      c.write_bandwidth = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !(c.write_bandwidth > 0) || !std::isfinite(c.write_bandwidth))
      doc.fail(v, "output.write_bandwidth", "expected one writer's bandwidth in MB/s, got '" + s + "'",
               "give a positive number (MB/s), or leave the key out to measure it");
  }
  text(o, "directory", c.directory);
  // One file for the coupler and the I/O layer: the run's `calendar` and `start_date` (top
  // level, the coupler's) are the output's defaults.
  const bool own_calendar = static_cast<bool>(o["calendar"]), own_reference = static_cast<bool>(o["reference_time"]);
  const char* calendar_key = own_calendar ? "output.calendar" : "calendar";
  const char* reference_key = own_reference ? "output.reference_time" : "start_date";
  if (const YAML::Node v = own_calendar ? o["calendar"] : root["calendar"]) {
    c.calendar = doc.scalar(v, calendar_key);
    if (!estuary::detail::is_cf_calendar(c.calendar))
      doc.fail(v, calendar_key, "unknown calendar '" + c.calendar + "'",
               std::string("use a CF calendar: ") + estuary::detail::cf_calendar_names());
  }
  const YAML::Node reference = own_reference ? o["reference_time"] : root["start_date"];
  if (reference) c.reference_time = doc.scalar(reference, reference_key);
  try {
    CalendarClock check(c.calendar, c.reference_time);  // a date of that calendar
  } catch (const Error& e) {
    doc.fail(reference ? reference : o, reference_key, e.fault() + " in calendar " + c.calendar, e.fix());
  }
  if (const YAML::Node v = o["format"]) c.format = format(doc, v, "output.format");
  if (const YAML::Node v = o["catch_sigterm"]) c.catch_sigterm = doc.boolean(v, "output.catch_sigterm");
  const YAML::Node files = o["files"];
  if (!files || !files.IsSequence() || files.size() == 0)
    doc.fail(files ? files : o, "output.files", "`files` must be a non-empty list");
  if (static_cast<long long>(files.size()) > estuary::detail::kMaxOutputFiles)
    doc.fail(files, "output.files", std::to_string(files.size()) + " files, more than the " +
                                        std::to_string(estuary::detail::kMaxOutputFiles) + " estuary writes from one configuration");
  if (const YAML::Node d = o["derived"]) {
    if (!d.IsSequence()) doc.fail(d, "output.derived", "`derived` must be a list of {name, expr}");
    for (std::size_t i = 0; i < d.size(); ++i) {
      const YAML::Node v = d[i];
      std::string q = "output.derived[" + std::to_string(i) + "]";
      if (!v.IsMap() || !v["name"] || !v["expr"])
        doc.fail(v, q, "a derived field needs a name and an expr", "e.g. {name: toce_e3t, expr: \"toce * e3t\"}");
      FieldConfig fd;
      fd.name = doc.scalar(v["name"], q + ".name");
      q += " (" + fd.name + ")";
      doc.keys(v, q, {"name", "expr", "freq_op", "at", "standard_name", "long_name", "units"});
      read_expression(doc, v, q, fd);
      if (v["standard_name"]) fd.standard_name = doc.scalar(v["standard_name"], q + ".standard_name");
      if (v["long_name"]) fd.long_name = doc.scalar(v["long_name"], q + ".long_name");
      if (v["units"]) fd.units = doc.scalar(v["units"], q + ".units");
      c.derived.push_back(std::move(fd));
    }
  }
  std::set<std::string> file_names;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const YAML::Node f = files[i];
    std::string p = "output.files[" + std::to_string(i) + "]";
    if (!f.IsMap()) doc.fail(f, p, "a file must be a map");
    FileConfig fc;
    if (!f["name"]) doc.fail(f, p + ".name", "a file needs a name");
    fc.name = doc.scalar(f["name"], p + ".name");
    if (fc.name.empty()) doc.fail(f["name"], p + ".name", "a file name is empty");
    p += " (" + fc.name + ")";
    doc.keys(f, p, {"name", "output_freq", "split_freq", "restart", "format", "grid", "fields", "zoom"});
    FieldConfig::Zoom file_zoom;  // the default of the file's fields
    std::string file_zoom_origin;
    if (const YAML::Node z = f["zoom"]) {
      file_zoom = detail::yaml_zoom(doc, z, p + ".zoom");
      file_zoom_origin = doc.where(z, p + ".zoom");
    }
    if (!file_names.insert(fc.name).second) doc.fail(f["name"], p + ".name", "file listed twice");
    const YAML::Node of = f["output_freq"];
    if (!of) doc.fail(f, p + ".output_freq", "a file needs an output_freq");
    fc.output_freq = parse_frequency(doc.scalar(of, p + ".output_freq"), doc.where(of, p + ".output_freq"));
    if (const YAML::Node v = f["restart"]) fc.restart = doc.boolean(v, p + ".restart");
    fc.format = c.format;
    if (const YAML::Node v = f["format"]) fc.format = format(doc, v, p + ".format");
    if (const YAML::Node sf = f["split_freq"]) {
      const std::string key = p + ".split_freq";
      fc.split_freq = parse_frequency(doc.scalar(sf, key), doc.where(sf, key));
      if (fc.restart) doc.fail(sf, key, "a restart file cannot be split", "remove split_freq or restart");
      if (!holds_whole(fc.split_freq, fc.output_freq))
        doc.fail(sf, key, "split_freq is not a multiple of output_freq",
                 "make every split period hold whole output periods (a month holds whole periods that divide a day)");
    }
    if (const YAML::Node g = f["grid"]) fc.grid = parse_regrid(doc, g, p + ".grid");  // io/regrid.hpp
    const YAML::Node fields = f["fields"];
    if (!fields || !fields.IsSequence() || fields.size() == 0)
      doc.fail(fields ? fields : f, p + ".fields", "`fields` must be a non-empty list");
    if (static_cast<long long>(fields.size()) > estuary::detail::kMaxFieldsPerFile)
      doc.fail(fields, p + ".fields", std::to_string(fields.size()) + " fields, more than the " +
                                          std::to_string(estuary::detail::kMaxFieldsPerFile) + " estuary writes to one file",
               "split them over several files");
    std::set<std::string> names;
    for (std::size_t j = 0; j < fields.size(); ++j) {
      const YAML::Node v = fields[j];
      std::string q = p + ".fields[" + std::to_string(j) + "]";
      FieldConfig fd;
      fd.origin = doc.where(v, q);
      if (v.IsScalar()) {
        fd.name = v.Scalar();
      } else if (v.IsMap()) {
        if (!v["name"]) doc.fail(v, q + ".name", "a field needs a name");
        fd.name = doc.scalar(v["name"], q + ".name");
        q += " (" + fd.name + ")";
        doc.keys(v, q, {"name", "output_name", "operation", "precision", "deflate", "sampling_freq", "standard_name",
                        "long_name", "units", "quantize", "significant_digits", "significant_bits", "zstd", "expr",
                        "freq_op", "at", "zoom", "levels", "interpolate_levels"});
        auto key = [&](const char* k) { return q + "." + k; };
        read_expression(doc, v, q, fd);
        if (fd.freq_op && !holds_whole(fc.output_freq, fd.freq_op))
          doc.fail(v["freq_op"], key("freq_op"), "output_freq is not a multiple of freq_op",
                   "make every output period hold whole freq_op periods (a month holds whole periods that divide a day)");
        if (fd.freq_op && v["sampling_freq"])
          doc.fail(v["sampling_freq"], key("sampling_freq"), "sampling_freq with freq_op",
                   "the @ terms' periods are freq_op: the expression has a value at each one's end");
        if (v["output_name"]) {
          fd.output_name = doc.scalar(v["output_name"], key("output_name"));
          if (fd.output_name.empty()) doc.fail(v["output_name"], key("output_name"), "output_name is empty");
        }
        if (v["standard_name"]) fd.standard_name = doc.scalar(v["standard_name"], key("standard_name"));
        if (v["long_name"]) fd.long_name = doc.scalar(v["long_name"], key("long_name"));
        if (v["units"]) fd.units = doc.scalar(v["units"], key("units"));
        if (const YAML::Node x = v["deflate"]) {
          const std::string d = doc.scalar(x, key("deflate"));
          if (d.size() != 1 || d[0] < '0' || d[0] > '9')
            doc.fail(x, key("deflate"), "deflate level '" + d + "' is not 0..9",
                     "use 0 (none) to 9 (smallest); 1 to 4 are the usual choices");
          fd.deflate = d[0] - '0';
          if (fd.deflate > 0 && fc.format != Format::netcdf4)
            doc.fail(x, key("deflate"), "deflate needs a netCDF-4 file", "set format: netcdf4 on the file (or output)");
        }
        if (const YAML::Node x = v["quantize"]) {
          const std::string m = doc.scalar(x, key("quantize"));
          using Qz = FieldConfig::Quantize;
          fd.quantize = m == "bitgroom" ? Qz::bitgroom : m == "granularbr" ? Qz::granularbr : m == "bitround" ? Qz::bitround : Qz::none;
          if (fd.quantize == Qz::none)
            doc.fail(x, key("quantize"), "unknown quantize '" + m + "'",
                     "use bitgroom or granularbr (with significant_digits) or bitround (with significant_bits)");
          const bool bits = fd.quantize == Qz::bitround;
          const char* sig = bits ? "significant_bits" : "significant_digits";
          const char* other = bits ? "significant_digits" : "significant_bits";
          if (v[other])
            doc.fail(v[other], key(other), std::string(other) + " does not go with quantize " + m,
                     std::string("give ") + sig + " instead");
          if (!v[sig]) doc.fail(x, key("quantize"), "quantize " + m + " needs " + sig);
          fd.significant = positive_int(doc, v[sig], key(sig));
          if (fc.format != Format::netcdf4)
            doc.fail(x, key("quantize"), "quantize needs a netCDF-4 file", "set format: netcdf4 on the file (or output)");
        } else if (v["significant_digits"] || v["significant_bits"]) {
          doc.fail(v["significant_digits"] ? v["significant_digits"] : v["significant_bits"], key("quantize"),
                   "significant digits or bits without quantize", "add quantize: bitgroom, granularbr or bitround");
        }
        if (const YAML::Node x = v["zstd"]) {
          fd.zstd = positive_int(doc, x, key("zstd"));
          if (fd.zstd > 22) doc.fail(x, key("zstd"), "zstd level " + std::to_string(fd.zstd) + " is not 1..22");
          if (fc.format != Format::netcdf4)
            doc.fail(x, key("zstd"), "zstd needs a netCDF-4 file", "set format: netcdf4 on the file (or output)");
        }
        if (const YAML::Node x = v["sampling_freq"]) {
          fd.sampling_freq_s = parse_duration(doc.scalar(x, key("sampling_freq")), doc.where(x, key("sampling_freq")));
          Frequency sampling;
          sampling.seconds = fd.sampling_freq_s;
          if (!holds_whole(fc.output_freq, sampling))
            doc.fail(x, key("sampling_freq"), "output_freq is not a multiple of sampling_freq",
                     "make every output period hold whole sampling periods (a month holds whole periods that divide a day)");
        }
        if (const YAML::Node x = v["operation"]) {
          const std::string op = doc.scalar(x, key("operation"));
          if (!detail::operation_from_name(op, fd.operation))
            doc.fail(x, key("operation"), "unknown operation '" + op + "'",
                     "use instant, average, minimum, maximum, accumulate or once");
        }
        if (const YAML::Node x = v["precision"]) {
          const std::string pr = doc.scalar(x, key("precision"));
          if (pr == "float") fd.precision = Precision::f32;
          else if (pr == "double") fd.precision = Precision::f64;
          else doc.fail(x, key("precision"), "unknown precision '" + pr + "'", "use float or double");
        }
        if (fd.quantize != FieldConfig::Quantize::none) {  // netCDF's limits for the stored type
          const bool bits = fd.quantize == FieldConfig::Quantize::bitround, f32 = fd.precision == Precision::f32;
          const int most = bits ? (f32 ? 23 : 52) : (f32 ? 7 : 15);
          const char* sig = bits ? "significant_bits" : "significant_digits";
          if (fd.significant > most)
            doc.fail(v[sig], key(sig), std::to_string(fd.significant) + " significant " + (bits ? "bits" : "digits") +
                                           " for a " + (f32 ? "float" : "double") + " variable, more than its " +
                                           std::to_string(most));
        }
      } else {
        doc.fail(v, q, "a field must be a name or a map");
      }
      if (fd.name.empty()) doc.fail(v, q, "a field name is empty");
      detail::yaml_field_levels_and_zoom(doc, v, q, file_zoom, file_zoom_origin, fd);
      // Variables are unique in a file; a model field may feed several (output_name).
      if (!names.insert(fd.variable()).second)
        doc.fail(v, q, "field listed twice (variable '" + fd.variable() + "')", "give one of them another output_name");
      fc.fields.push_back(fd);
    }
    if (detail::mixes_time_axes(fc))
      doc.fail(fields, p + ".fields", "file mixes instant fields with averaged/min/max/accumulated ones",
               "put them in two files");
    c.files.push_back(std::move(fc));
  }
  derived_fields(c);  // one expression a derived name, no cycles among them
  return c;
}

}  // namespace

// Both read through YamlFile, the loader the coupler reads the same file with.
OutputConfig OutputConfig::from_yaml_string(const std::string& text, const std::string& source) {
  const YamlFile doc = YamlFile::parse(text, source);
  try {
    return parse(doc);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML: ") + e.what(), source);
  }
}

OutputConfig OutputConfig::from_yaml_file(const std::string& path) {
  const YamlFile doc = YamlFile::load(path);
  try {
    return parse(doc);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML: ") + e.what(), path);
  }
}

}  // namespace estuary::io

namespace estuary {
template <>
io::Mode from_name<io::Mode>(std::string_view name) {
  static constexpr io::Mode all[] = {io::Mode::serverless, io::Mode::server};
  return detail::enum_named(name, all, "I/O mode");
}
}  // namespace estuary
