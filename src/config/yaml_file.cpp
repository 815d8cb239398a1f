#include "config/yaml_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/checked.hpp"
#include "estuary/error.hpp"

namespace estuary::detail::config {

namespace {

std::string quoted(std::string_view s) {
  std::string r(1, '\'');
  r.append(s);
  r += '\'';
  return r;
}

std::string joined(std::string_view a, std::string_view sep, std::string_view b) {
  std::string r(a);
  if (!r.empty()) r.append(sep);
  r.append(b);
  return r;
}

}  // namespace

YamlFile YamlFile::parse(const std::string& text, const std::string& source) {
  check_config_text(text, source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::string at = source;
    if (!e.mark.is_null()) at.append(":").append(std::to_string(e.mark.line + 1));
    throw Error("YAML syntax error: " + e.msg, at, "see docs/configuration.md");
  }
  if (!root || root.IsNull()) throw Error("the configuration is empty", source, "see docs/configuration.md");
  return YamlFile(root, source);
}

YamlFile YamlFile::load(const std::string& path) {
  const auto text = read_config_file(path);
  if (!text) throw Error("cannot read the configuration file", path, "check the path and permissions");
  return parse(*text, path);
}

std::string YamlFile::line_of(const YAML::Node& at) const {
  std::string r = source_;
  const YAML::Mark m = at.Mark();
  if (!m.is_null()) r.append(":").append(std::to_string(m.line + 1));
  return r;
}

std::string YamlFile::where(const YAML::Node& at, std::string_view key) const {
  std::string r = line_of(at);
  if (!key.empty()) r.append(", key ").append(key);
  return r;
}

void YamlFile::fail(const YAML::Node& at, std::string_view key, const std::string& what,
                    const std::string& fix) const {
  throw Error(what, where(at, key), fix);
}

void YamlFile::check_sections() const {
  if (!root_.IsMap()) fail(root_, "", "the configuration must be a mapping of sections (key: value)",
                           "see docs/configuration.md");
  std::vector<std::string> seen;
  for (const auto& kv : root_) {
    const std::string k = kv.first.Scalar();
    if (std::none_of(std::begin(kSections), std::end(kSections), [&](const Section& s) { return k == s.key; })) {
      std::string list;
      for (const Section& s : kSections) list.append(list.empty() ? "" : ", ").append(s.key);
      fail(kv.first, k, "unknown key " + quoted(k) + " in the configuration", "known keys: " + list);
    }
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      fail(kv.first, k, "key " + quoted(k) + " given twice in the configuration", "give each key once");
    seen.push_back(k);
  }
}

void YamlFile::keys(const YAML::Node& map, std::string_view key, std::initializer_list<const char*> known,
                    std::string_view sep) const {
  if (!map.IsMap()) fail(map, key, std::string(key) + " must be a mapping (key: value)");
  std::vector<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) fail(kv.first, joined(key, sep, "?"), "a key must be a name");
    const std::string k = kv.first.Scalar();
    if (std::find_if(known.begin(), known.end(), [&](const char* s) { return k == s; }) == known.end()) {
      std::string list;
      for (const char* s : known) list.append(list.empty() ? "" : ", ").append(s);
      fail(kv.first, joined(key, sep, k), "unknown key " + quoted(k) + " in " + std::string(key),
           "known keys: " + list);
    }
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      fail(kv.first, joined(key, sep, k), "key " + quoted(k) + " given twice in " + std::string(key),
           "give each key once");
    seen.push_back(k);
  }
}

YAML::Node YamlFile::required(const YAML::Node& map, const char* name, std::string_view key,
                              std::string_view sep) const {
  const YAML::Node v = map[name];
  if (!v) fail(map, joined(key, sep, name), "missing required key " + quoted(name) + " in " +
                                                 (key.empty() ? std::string("the configuration") : std::string(key)));
  return v;
}

std::string YamlFile::scalar(const YAML::Node& v, std::string_view key) const {
  if (!v.IsScalar()) fail(v, key, std::string(key) + " must be a single value");
  return v.Scalar();
}

double YamlFile::number(const YAML::Node& v, std::string_view key) const {
  const std::string s = scalar(v, key);
  char* end = nullptr;
  errno = 0;
  const double x = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(x))
    fail(v, key, std::string(key) + " must be a number, found " + quoted(s));
  return x;
}

long long YamlFile::integer(const YAML::Node& v, std::string_view key, long long lo, long long hi) const {
  const std::string text = scalar(v, key);
  const std::string k(key);
  if (!parse_integer(text) && text.find_first_not_of("+-0123456789") != std::string::npos)
    fail(v, key, k + " must be an integer, found " + quoted(text));
  return integer_in(text, lo, hi, k, [&](const std::string& m) { fail(v, key, m); });
}

bool YamlFile::boolean(const YAML::Node& v, std::string_view key) const {
  scalar(v, key);
  bool b = false;
  if (!YAML::convert<bool>::decode(v, b))
    fail(v, key, std::string(key) + " must be true or false, found " + quoted(v.Scalar()));
  return b;
}

}  // namespace estuary::detail::config
