// estuary's configuration file: one YAML file whose top-level sections are read by the parts
// that own them (`couplings:` and the run settings by the coupler, `output:` by the I/O layer),
// loaded and checked in one place with one error style. Every error names the file, the line
// and the key: Error(what, "PATH:LINE, key KEY", fix), KEY the path from the top
// ("couplings[0].source.nx", "output.files[1] (day).split_freq").
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

namespace estuary::detail::config {

// The top-level keys of the configuration file and the part that reads each: a reader accepts
// every one of them (a file may hold both sections) and refuses any other.
struct Section {
  const char* key;
  const char* reader;  // "couple" or "io"
};
inline constexpr Section kSections[] = {
    {"runtime", "couple"}, {"log_level", "couple"}, {"no_restart", "couple"}, {"map_decomposition", "couple"},
    {"weight_option", "couple"}, {"timeout", "couple"}, {"timeline", "couple"}, {"start_date", "couple"},
    {"calendar", "couple"}, {"schedule", "couple"}, {"couplings", "couple"},
    {"output", "io"}};

class YamlFile {
 public:
  // Reads and parses the file `path` (at most kMaxConfigBytes of UTF-8, see common/checked.hpp).
  static YamlFile load(const std::string& path);
  // Parses `text`; `source` names it in errors (a path, or e.g. "<string>").
  static YamlFile parse(const std::string& text, const std::string& source);

  const YAML::Node& root() const { return root_; }
  const std::string& source() const { return source_; }

  // "PATH:LINE" of `at` (PATH alone when yaml-cpp has no mark for it).
  std::string line_of(const YAML::Node& at) const;
  // "PATH:LINE, key KEY": the place of an error.
  std::string where(const YAML::Node& at, std::string_view key) const;
  [[noreturn]] void fail(const YAML::Node& at, std::string_view key, const std::string& what,
                         const std::string& fix = {}) const;

  // The top level is a mapping whose keys are sections of kSections, each once.
  void check_sections() const;
  // `map` (at key `key`) is a mapping with only `known` keys, each once; an unknown or repeated
  // key fails at its own line with the key `key` + `sep` + name ("." after a plain key).
  void keys(const YAML::Node& map, std::string_view key, std::initializer_list<const char*> known,
            std::string_view sep = ".") const;
  // map[name], or a failure at `map` naming the missing key.
  YAML::Node required(const YAML::Node& map, const char* name, std::string_view key,
                      std::string_view sep = ".") const;
  std::string scalar(const YAML::Node& v, std::string_view key) const;
  double number(const YAML::Node& v, std::string_view key) const;
  // An integer within [lo, hi] (the range of an int unless given).
  long long integer(const YAML::Node& v, std::string_view key,
                    long long lo = std::numeric_limits<int>::min(),
                    long long hi = std::numeric_limits<int>::max()) const;
  // YAML's booleans: true/false, yes/no, on/off (any case, as yaml-cpp reads them).
  bool boolean(const YAML::Node& v, std::string_view key) const;

 private:
  YamlFile(YAML::Node root, std::string source) : root_(std::move(root)), source_(std::move(source)) {}
  YAML::Node root_;
  std::string source_;
};

}  // namespace estuary::detail::config
