// The coupler's configuration readers share this: the vocabulary of both formats (statuses,
// transformations, LOCTRANS operations, CONSERV options, names case-insensitive) and the checks
// that do not depend on the format (check_scripr, check_coupling, Exchanges), so that a setting
// means the same and fails the same way in a namcouple (namcouple.cpp) and in YAML
// (config_yaml.cpp). Each check reports through the reader's `fail(what, fix)`, which throws at
// the reader's place (file and line, key).
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/checked.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"

namespace estuary::detail::config {

inline std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

inline std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// (Built with append, not "'" + s + "'": GCC 12 warns about that form, a false -Wrestrict.)
inline std::string quoted(std::string_view s) {
  std::string r(1, '\'');
  r.append(s);
  r += '\'';
  return r;
}

// The whole string must be a finite number: "3600", "3600.", "1.5e3".
inline std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Ranges of the integers a configuration gives (every integer read is range-checked: no wrap).
inline constexpr long long kIntMax = std::numeric_limits<int>::max();
inline constexpr long long kIntMin = std::numeric_limits<int>::min();
// Grid sizes: at least 1 when given, and nx * ny must fit in 64 bits (checked where both known).
inline constexpr long long kSizeMax = std::numeric_limits<std::int64_t>::max();

inline std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// ---- vocabulary shared by both formats (names are case-insensitive) ----

inline constexpr std::array<const char*, 9> kTransforms{"LOCTRANS", "MAPPING", "SCRIPR",   "CONSERV", "BLASOLD",
                                                 "BLASNEW",  "CHECKIN", "CHECKOUT", "STACK"};
// OASIS3 transformations OASIS3-MCT dropped: named so that an old namcouple gets a precise message.
inline constexpr std::array<const char*, 13> kObsoleteTransforms{
    "NOINTERP", "REDGLO", "INVERT", "MASK",    "EXTRAP", "CORRECT", "INTERP",
    "MOZAIC",   "FILLING", "MASKP", "REVERSE", "GLORED", "SUBGRID"};

inline bool is_transform(const std::string& up) {
  return std::find(kTransforms.begin(), kTransforms.end(), up) != kTransforms.end();
}
inline bool is_obsolete_transform(const std::string& up) {
  return std::find(kObsoleteTransforms.begin(), kObsoleteTransforms.end(), up) !=
         kObsoleteTransforms.end();
}

inline constexpr std::array<LocTrans, 5> kLocTrans{LocTrans::instant, LocTrans::accumul,
                                            LocTrans::average, LocTrans::t_min, LocTrans::t_max};

inline std::optional<LocTrans> loctrans_by_name(const std::string& s) {
  for (LocTrans t : kLocTrans)
    if (upper(s) == name_of(t)) return t;
  return std::nullopt;
}

inline std::optional<ConservMode> conserv_mode_named(const std::string& s) {
  for (ConservMode m : {ConservMode::global, ConservMode::glbpos, ConservMode::basbal,
                        ConservMode::baspos})
    if (upper(s) == name_of(m)) return m;
  return std::nullopt;
}

// OASIS's two CONSERV options name the OASIS3-MCT 3.0 algorithms: bfb gathers (ordered sum),
// opt sums locally then reduces.
inline std::optional<SumMethod> sum_method_named(const std::string& s) {
  const std::string l = lower(s);
  if (l == "bfb") return SumMethod::gather;
  if (l == "opt") return SumMethod::lsum8;
  for (SumMethod m : sum_methods)
    if (l == name_of(m)) return m;
  return std::nullopt;
}
inline const char* kSumMethodsText = "bfb, opt, gather, lsum8, lsum16, ddpdd or reprosum";

inline std::optional<RemapLocation> location_named(const std::string& s) {
  if (lower(s) == "src") return RemapLocation::src;
  if (lower(s) == "dst") return RemapLocation::dst;
  return std::nullopt;
}
// OASIS's "opt" is its non-reproducible partial-sum mapping, which is estuary's sum.
inline std::optional<RemapOrder> order_named(const std::string& s) {
  if (lower(s) == "bfb") return RemapOrder::bfb;
  if (lower(s) == "sum" || lower(s) == "opt") return RemapOrder::sum;
  return std::nullopt;
}

// Status with OASIS's old names folded in; `renamed` tells the reader to leave a note.
inline std::optional<FieldStatus> status_named(const std::string& s, bool& renamed) {
  const std::string up = upper(s);
  renamed = up == "IGNORED" || up == "IGNOUT";
  if (up == "EXPORTED" || up == "IGNORED") return FieldStatus::exported;
  if (up == "EXPOUT" || up == "IGNOUT") return FieldStatus::expout;
  if (up == "INPUT") return FieldStatus::input;
  if (up == "OUTPUT") return FieldStatus::output;
  return std::nullopt;
}
inline const char* kStatusesText = "EXPORTED, EXPOUT, IGNORED, IGNOUT, INPUT or OUTPUT";

// A reader's failure: `fail(what, fix)` throws an Error at the reader's place (file and line, key).
using Fail = std::function<void(const std::string& what, const std::string& fix)>;

// SCRIPR's words, checked the same way in both formats: first what OASIS3-MCT refuses itself
// (mod_oasis_namcouple), then what OASIS accepts but estuary does not do yet, each with its own
// message. Normalises the words (capitals, the NF variants, VECTOR read as SCALAR).
void check_scripr(ScriprSpec& s, const Fail& fail);

// Checks of a coupling that do not depend on the format.
void check_coupling(const CouplingConfig& c, const Fail& fail, bool negative_period_ok = false);

// The exchanges (source field to target field, with their components) of a configuration: the
// same one twice is refused at the later coupling, naming the first. Also bounds the fields of
// the whole configuration (kMaxFieldsTotal), so that YAML aliases cannot multiply the work.
class Exchanges {
 public:
  static constexpr long long kMaxFieldsTotal = 100000;
  void add(const CouplingConfig& c, const Fail& fail);

 private:
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::string> seen_;
};

// ESTUARY_TIMEOUT (or its aliases ESTUARY_COUPLE_TIMEOUT, ESTUARY_EXCHANGE_TIMEOUT), when set,
// overrides the file's time-out (both formats; estuary::Settings).
void apply_timeout_override(CouplingSetup& s);

}  // namespace estuary::detail::config
