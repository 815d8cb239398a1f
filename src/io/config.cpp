// The output configuration in YAML: the XIOS iodef.xml concepts (files with an output
// frequency, fields with a temporal operation and a precision) in the `output:` section of
// estuary's configuration file. Every error names the file and the key at fault.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>
#include <utility>

#include "common/checked.hpp"
#include "estuary/io.hpp"

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

namespace {

// True when every period of `big` is made of whole periods of `small` (both start at the
// reference time; month periods end on whole days after it).
bool holds_whole(const Frequency& big, const Frequency& small) {
  auto divides = [](double a, double b) {
    const double r = std::fmod(a, b);
    return r <= 1e-9 * a || b - r <= 1e-9 * a;
  };
  if (big.months > 0) return small.months > 0 ? big.months % small.months == 0 : divides(86400.0, small.seconds);
  return small.months == 0 && divides(big.seconds, small.seconds);
}

std::string at(const std::string& source, const std::string& path) {
  return "config " + source + ", key " + path;
}

// Checks that the mapping `n` has only `known` keys, each once (yaml-cpp keeps a repeated key
// and answers lookups with the first: the repeat would be silently ignored).
void only_keys(const YAML::Node& n, const std::set<std::string>& known, const std::string& source,
               const std::string& path) {
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) throw Error("a key must be a name", at(source, path + "?"));
    const std::string k = kv.first.Scalar();
    if (!known.count(k)) {
      std::string list;
      for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
      throw Error("unknown key '" + k + "'", at(source, path + k), "known keys here: " + list);
    }
    if (!seen.insert(k).second) {
      const YAML::Mark m = kv.first.Mark();
      throw Error("key '" + k + "' given twice" +
                      (m.is_null() ? std::string() : " (again at line " + std::to_string(m.line + 1) + ")"),
                  at(source, path + k), "give each key once");
    }
  }
}

std::string scalar(const YAML::Node& n, const std::string& source, const std::string& path) {
  if (!n.IsScalar()) throw Error("expected a single value", at(source, path));
  return n.as<std::string>();
}

int positive_int(const YAML::Node& n, const std::string& source, const std::string& path) {
  const std::string s = scalar(n, source, path);
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 1 || v > 1 << 20)
    throw Error("expected a positive integer, got '" + s + "'", at(source, path));
  return static_cast<int>(v);
}

Format format(const YAML::Node& n, const std::string& source, const std::string& path) {
  const std::string s = scalar(n, source, path);
  if (s == "cdf5") return Format::cdf5;
  if (s == "netcdf4") return Format::netcdf4;
  throw Error("unknown format '" + s + "'", at(source, path), "use cdf5 (PnetCDF) or netcdf4 (HDF5)");
}

bool boolean(const YAML::Node& n, const std::string& source, const std::string& path) {
  const std::string s = scalar(n, source, path);
  if (s == "true" || s == "yes") return true;
  if (s == "false" || s == "no") return false;
  throw Error("expected true or false, got '" + s + "'", at(source, path));
}

OutputConfig parse(const YAML::Node& root, const std::string& source) {
  OutputConfig c;
  c.source = source;
  if (!root.IsMap() || !root["output"])
    throw Error("no `output:` section", "config " + source, "put the I/O settings under `output:`");
  const YAML::Node o = root["output"];
  if (!o.IsMap()) throw Error("`output` must be a map", at(source, "output"));
  only_keys(o, {"mode", "writers", "buffer_records", "directory", "calendar", "reference_time",
                "catch_sigterm", "format", "files", "title", "institution", "source", "comment", "history"},
            source, "output.");
  if (o["title"]) c.title = scalar(o["title"], source, "output.title");
  if (o["institution"]) c.institution = scalar(o["institution"], source, "output.institution");
  if (o["source"]) c.source_attribute = scalar(o["source"], source, "output.source");
  if (o["comment"]) c.comment = scalar(o["comment"], source, "output.comment");
  if (o["history"]) c.history = scalar(o["history"], source, "output.history");
  if (o["mode"]) {
    const std::string m = scalar(o["mode"], source, "output.mode");
    if (m == "server") c.mode = Mode::server;
    else if (m == "serverless") c.mode = Mode::serverless;
    else throw Error("unknown mode '" + m + "'", at(source, "output.mode"), "use server or serverless");
  }
  if (o["writers"]) c.writers = positive_int(o["writers"], source, "output.writers");
  if (o["buffer_records"])
    c.buffer_records = positive_int(o["buffer_records"], source, "output.buffer_records");
  if (o["directory"]) c.directory = scalar(o["directory"], source, "output.directory");
  if (o["calendar"]) {
    c.calendar = scalar(o["calendar"], source, "output.calendar");
    static const std::set<std::string> cf = {"standard", "gregorian", "proleptic_gregorian", "noleap",
                                             "365_day", "all_leap", "366_day", "360_day", "julian"};
    if (!cf.count(c.calendar))
      throw Error("unknown calendar '" + c.calendar + "'", at(source, "output.calendar"),
                  "use a CF calendar: standard, proleptic_gregorian, noleap, 360_day, ...");
  }
  if (o["reference_time"]) c.reference_time = scalar(o["reference_time"], source, "output.reference_time");
  try {
    CalendarClock check(c.calendar, c.reference_time);  // a date of that calendar
  } catch (const Error& e) {
    throw Error(e.fault() + " in calendar " + c.calendar, at(source, "output.reference_time"), e.fix());
  }
  if (o["format"]) c.format = format(o["format"], source, "output.format");
  if (o["catch_sigterm"]) c.catch_sigterm = boolean(o["catch_sigterm"], source, "output.catch_sigterm");
  if (!o["files"] || !o["files"].IsSequence() || o["files"].size() == 0)
    throw Error("`files` must be a non-empty list", at(source, "output.files"));
  if (static_cast<long long>(o["files"].size()) > detail::kMaxOutputFiles)
    throw Error(std::to_string(o["files"].size()) + " files, more than the " +
                    std::to_string(detail::kMaxOutputFiles) + " estuary writes from one configuration",
                at(source, "output.files"));
  std::set<std::string> file_names;
  for (std::size_t i = 0; i < o["files"].size(); ++i) {
    const YAML::Node f = o["files"][i];
    std::string p = "output.files[" + std::to_string(i) + "]";
    if (!f.IsMap()) throw Error("a file must be a map", at(source, p));
    FileConfig fc;
    if (!f["name"]) throw Error("a file needs a name", at(source, p + ".name"));
    fc.name = scalar(f["name"], source, p + ".name");
    if (fc.name.empty()) throw Error("a file name is empty", at(source, p + ".name"));
    p += " (" + fc.name + ").";
    only_keys(f, {"name", "output_freq", "split_freq", "restart", "format", "fields"}, source, p);
    if (!file_names.insert(fc.name).second) throw Error("file listed twice", at(source, p + "name"));
    if (!f["output_freq"]) throw Error("a file needs an output_freq", at(source, p + "output_freq"));
    fc.output_freq = parse_frequency(scalar(f["output_freq"], source, p + "output_freq"), at(source, p + "output_freq"));
    if (f["restart"]) fc.restart = boolean(f["restart"], source, p + "restart");
    fc.format = c.format;
    if (f["format"]) fc.format = format(f["format"], source, p + "format");
    if (f["split_freq"]) {
      fc.split_freq = parse_frequency(scalar(f["split_freq"], source, p + "split_freq"), at(source, p + "split_freq"));
      if (fc.restart)
        throw Error("a restart file cannot be split", at(source, p + "split_freq"),
                    "remove split_freq or restart");
      if (!holds_whole(fc.split_freq, fc.output_freq))
        throw Error("split_freq is not a multiple of output_freq", at(source, p + "split_freq"),
                    "make every split period hold whole output periods (a month holds whole periods that divide a day)");
    }
    if (!f["fields"] || !f["fields"].IsSequence() || f["fields"].size() == 0)
      throw Error("`fields` must be a non-empty list", at(source, p + "fields"));
    if (static_cast<long long>(f["fields"].size()) > detail::kMaxFieldsPerFile)
      throw Error(std::to_string(f["fields"].size()) + " fields, more than the " +
                      std::to_string(detail::kMaxFieldsPerFile) + " estuary writes to one file",
                  at(source, p + "fields"), "split them over several files");
    std::set<std::string> names;
    for (std::size_t j = 0; j < f["fields"].size(); ++j) {
      const YAML::Node v = f["fields"][j];
      std::string q = p + "fields[" + std::to_string(j) + "]";
      FieldConfig fd;
      if (v.IsScalar()) {
        fd.name = v.as<std::string>();
      } else if (v.IsMap()) {
        if (!v["name"]) throw Error("a field needs a name", at(source, q + ".name"));
        fd.name = scalar(v["name"], source, q + ".name");
        q += " (" + fd.name + ").";
        only_keys(v, {"name", "operation", "precision", "deflate", "sampling_freq", "standard_name", "long_name", "units",
                      "quantize", "significant_digits", "significant_bits", "zstd"},
                  source, q);
        if (v["standard_name"]) fd.standard_name = scalar(v["standard_name"], source, q + "standard_name");
        if (v["long_name"]) fd.long_name = scalar(v["long_name"], source, q + "long_name");
        if (v["units"]) fd.units = scalar(v["units"], source, q + "units");
        if (v["deflate"]) {
          const std::string d = scalar(v["deflate"], source, q + "deflate");
          if (d.size() != 1 || d[0] < '0' || d[0] > '9')
            throw Error("deflate level '" + d + "' is not 0..9", at(source, q + "deflate"),
                        "use 0 (none) to 9 (smallest); 1 to 4 are the usual choices");
          fd.deflate = d[0] - '0';
          if (fd.deflate > 0 && fc.format != Format::netcdf4)
            throw Error("deflate needs a netCDF-4 file", at(source, q + "deflate"),
                        "set format: netcdf4 on the file (or output)");
        }
        if (v["quantize"]) {
          const std::string m = scalar(v["quantize"], source, q + "quantize");
          using Qz = FieldConfig::Quantize;
          fd.quantize = m == "bitgroom" ? Qz::bitgroom : m == "granularbr" ? Qz::granularbr : m == "bitround" ? Qz::bitround : Qz::none;
          if (fd.quantize == Qz::none)
            throw Error("unknown quantize '" + m + "'", at(source, q + "quantize"),
                        "use bitgroom or granularbr (with significant_digits) or bitround (with significant_bits)");
          const bool bits = fd.quantize == Qz::bitround;
          const char* key = bits ? "significant_bits" : "significant_digits";
          const char* other = bits ? "significant_digits" : "significant_bits";
          if (v[other])
            throw Error(std::string(other) + " does not go with quantize " + m, at(source, q + other),
                        std::string("give ") + key + " instead");
          if (!v[key]) throw Error("quantize " + m + " needs " + key, at(source, q + "quantize"));
          fd.significant = positive_int(v[key], source, q + key);
          if (fc.format != Format::netcdf4)
            throw Error("quantize needs a netCDF-4 file", at(source, q + "quantize"), "set format: netcdf4 on the file (or output)");
        } else if (v["significant_digits"] || v["significant_bits"]) {
          throw Error("significant digits or bits without quantize", at(source, q + "quantize"),
                      "add quantize: bitgroom, granularbr or bitround");
        }
        if (v["zstd"]) {
          fd.zstd = positive_int(v["zstd"], source, q + "zstd");
          if (fd.zstd > 22) throw Error("zstd level " + std::to_string(fd.zstd) + " is not 1..22", at(source, q + "zstd"));
          if (fc.format != Format::netcdf4)
            throw Error("zstd needs a netCDF-4 file", at(source, q + "zstd"), "set format: netcdf4 on the file (or output)");
        }
        if (v["sampling_freq"]) {
          fd.sampling_freq_s = parse_duration(scalar(v["sampling_freq"], source, q + "sampling_freq"),
                                              at(source, q + "sampling_freq"));
          Frequency sampling;
          sampling.seconds = fd.sampling_freq_s;
          if (!holds_whole(fc.output_freq, sampling))
            throw Error("output_freq is not a multiple of sampling_freq", at(source, q + "sampling_freq"),
                        "make every output period hold whole sampling periods (a month holds whole periods that divide a day)");
        }
        if (v["operation"]) {
          const std::string op = scalar(v["operation"], source, q + "operation");
          bool found = false;
          for (Operation o2 : {Operation::instant, Operation::average, Operation::minimum,
                               Operation::maximum, Operation::accumulate, Operation::once})
            if (op == name_of(o2)) { fd.operation = o2; found = true; }
          if (!found)
            throw Error("unknown operation '" + op + "'", at(source, q + "operation"),
                        "use instant, average, minimum, maximum, accumulate or once");
        }
        if (v["precision"]) {
          const std::string pr = scalar(v["precision"], source, q + "precision");
          if (pr == "float") fd.precision = Precision::f32;
          else if (pr == "double") fd.precision = Precision::f64;
          else throw Error("unknown precision '" + pr + "'", at(source, q + "precision"), "use float or double");
        }
        if (fd.quantize != FieldConfig::Quantize::none) {  // netCDF's limits for the stored type
          const bool bits = fd.quantize == FieldConfig::Quantize::bitround, f32 = fd.precision == Precision::f32;
          const int most = bits ? (f32 ? 23 : 52) : (f32 ? 7 : 15);
          if (fd.significant > most)
            throw Error(std::to_string(fd.significant) + " significant " + (bits ? "bits" : "digits") + " for a " +
                            (f32 ? "float" : "double") + " variable, more than its " + std::to_string(most),
                        at(source, q + (bits ? "significant_bits" : "significant_digits")));
        }
      } else {
        throw Error("a field must be a name or a map", at(source, q));
      }
      if (fd.name.empty()) throw Error("a field name is empty", at(source, q));
      if (!names.insert(fd.name).second) throw Error("field listed twice", at(source, q));
      fc.fields.push_back(fd);
    }
    // One time axis a file: instant values sit at the output time, the others at the middle
    // of their period with time_bnds; mixing both in one file would need two time axes.
    bool inst = false, period = false;
    for (const FieldConfig& fd : fc.fields) {
      if (fd.operation == Operation::instant) inst = true;
      else if (fd.operation != Operation::once) period = true;
    }
    if (inst && period)
      throw Error("file mixes instant fields with averaged/min/max/accumulated ones",
                  at(source, p + "fields"), "put them in two files");
    c.files.push_back(std::move(fc));
  }
  return c;
}

}  // namespace

OutputConfig OutputConfig::from_yaml_string(const std::string& text, const std::string& source) {
  detail::check_config_text(text, source, "config ");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML syntax: ") + e.what(), "config " + source);
  }
  try {
    return parse(root, source);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML: ") + e.what(), "config " + source);
  }
}

OutputConfig OutputConfig::from_yaml_file(const std::string& path) {
  const auto text = detail::read_config_file(path, "config ");
  if (!text) throw Error("cannot read the configuration", "config " + path, "check the path");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML syntax: ") + e.what(), "config " + path);
  }
  try {
    return parse(root, path);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("YAML: ") + e.what(), "config " + path);
  }
}

}  // namespace estuary::io
