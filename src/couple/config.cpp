// The coupler's configuration readers: OASIS3-MCT 4.0 namcouple files and estuary's YAML.
// Both fill the same CouplingSetup and share the vocabulary (statuses, transformation options)
// and the checks that do not depend on the format, so that a setting means the same in both.
#include "estuary/couple_config.hpp"

#include <yaml-cpp/yaml.h>

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

#include "common/checked.hpp"
#include "estuary/error.hpp"

namespace estuary {

namespace {

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// The whole string must be a finite number: "3600", "3600.", "1.5e3".
std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Ranges of the integers a configuration gives (every integer read is range-checked: no wrap).
constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kIntMin = std::numeric_limits<int>::min();
// Grid sizes: at least 1 when given, and nx * ny must fit in 64 bits (checked where both known).
constexpr long long kSizeMax = std::numeric_limits<std::int64_t>::max();

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// ---- vocabulary shared by both formats (names are case-insensitive) ----

constexpr std::array<const char*, 8> kTransforms{"LOCTRANS", "MAPPING", "SCRIPR",  "CONSERV",
                                                 "BLASOLD",  "BLASNEW", "CHECKIN", "CHECKOUT"};
// OASIS3 transformations OASIS3-MCT dropped: named so that an old namcouple gets a precise message.
constexpr std::array<const char*, 13> kObsoleteTransforms{
    "NOINTERP", "REDGLO", "INVERT", "MASK",    "EXTRAP", "CORRECT", "INTERP",
    "MOZAIC",   "FILLING", "MASKP", "REVERSE", "GLORED", "SUBGRID"};

bool is_transform(const std::string& up) {
  return std::find(kTransforms.begin(), kTransforms.end(), up) != kTransforms.end();
}
bool is_obsolete_transform(const std::string& up) {
  return std::find(kObsoleteTransforms.begin(), kObsoleteTransforms.end(), up) !=
         kObsoleteTransforms.end();
}

constexpr std::array<LocTrans, 5> kLocTrans{LocTrans::instant, LocTrans::accumul,
                                            LocTrans::average, LocTrans::t_min, LocTrans::t_max};

std::optional<LocTrans> loctrans_by_name(const std::string& s) {
  for (LocTrans t : kLocTrans)
    if (upper(s) == name_of(t)) return t;
  return std::nullopt;
}

std::optional<ConservMode> conserv_mode_named(const std::string& s) {
  for (ConservMode m : {ConservMode::global, ConservMode::glbpos, ConservMode::basbal,
                        ConservMode::baspos})
    if (upper(s) == name_of(m)) return m;
  return std::nullopt;
}

// OASIS's two CONSERV options name the OASIS3-MCT 3.0 algorithms: bfb gathers (ordered sum),
// opt sums locally then reduces.
std::optional<SumMethod> sum_method_named(const std::string& s) {
  const std::string l = lower(s);
  if (l == "bfb") return SumMethod::gather;
  if (l == "opt") return SumMethod::lsum8;
  for (SumMethod m : sum_methods)
    if (l == name_of(m)) return m;
  return std::nullopt;
}
const char* kSumMethodsText = "bfb, opt, gather, lsum8, lsum16, ddpdd or reprosum";

std::optional<RemapLocation> location_named(const std::string& s) {
  if (lower(s) == "src") return RemapLocation::src;
  if (lower(s) == "dst") return RemapLocation::dst;
  return std::nullopt;
}
// OASIS's "opt" is its non-reproducible partial-sum mapping, which is estuary's sum.
std::optional<RemapOrder> order_named(const std::string& s) {
  if (lower(s) == "bfb") return RemapOrder::bfb;
  if (lower(s) == "sum" || lower(s) == "opt") return RemapOrder::sum;
  return std::nullopt;
}

// Status with OASIS's old names folded in; `renamed` tells the reader to leave a note.
std::optional<FieldStatus> status_named(const std::string& s, bool& renamed) {
  const std::string up = upper(s);
  renamed = up == "IGNORED" || up == "IGNOUT";
  if (up == "EXPORTED" || up == "IGNORED") return FieldStatus::exported;
  if (up == "EXPOUT" || up == "IGNOUT") return FieldStatus::expout;
  if (up == "INPUT") return FieldStatus::input;
  if (up == "OUTPUT") return FieldStatus::output;
  return std::nullopt;
}
const char* kStatusesText = "EXPORTED, EXPOUT, IGNORED, IGNOUT, INPUT or OUTPUT";

// SCRIPR's words, checked the same way in both formats. `fail(what, fix)` throws.
template <class Fail>
void check_scripr(ScriprSpec& s, const Fail& fail) {
  s.method = upper(s.method);
  s.grid_type = upper(s.grid_type);
  s.field_type = upper(s.field_type);
  s.restriction = upper(s.restriction);
  s.normalization = upper(s.normalization);
  s.order = upper(s.order);
  if (s.method == "BICUBIC" || s.method == "GAUSWGT")
    fail("estuary does not generate SCRIPR " + s.method + " weights",
         "generate them offline (SCRIP, ESMF, CDO, ...) and use MAPPING with the weight file");
  if (s.method != "DISTWGT" && s.method != "BILINEAR" && s.method != "CONSERV")
    fail("unknown SCRIPR method " + quoted(s.method), "use DISTWGT, BILINEAR or CONSERV");
  if (s.grid_type != "LR" && s.grid_type != "D" && s.grid_type != "U")
    fail("unknown SCRIPR grid type " + quoted(s.grid_type), "use LR, D or U");
  if (s.field_type != "SCALAR")
    fail("SCRIPR field type " + quoted(s.field_type) + " is not supported",
         "use SCALAR (as OASIS3-MCT does)");
  if (s.restriction != "LATLON" && s.restriction != "LATITUDE")
    fail("unknown SCRIPR search restriction " + quoted(s.restriction), "use LATLON or LATITUDE");
  if (s.bins < 1) fail("SCRIPR needs at least 1 search bin", "give a positive bin count");
  if (s.neighbors < 1) fail("SCRIPR DISTWGT needs at least 1 neighbour", "give e.g. 4");
  if (s.method == "CONSERV") {
    if (s.normalization != "FRACAREA" && s.normalization != "DESTAREA" &&
        s.normalization != "FRACNNEI")
      fail("unknown SCRIPR CONSERV normalisation " + quoted(s.normalization),
           "use FRACAREA, DESTAREA or FRACNNEI");
    if (s.order != "FIRST" && s.order != "SECOND")
      fail("unknown SCRIPR CONSERV order " + quoted(s.order), "use FIRST or SECOND");
  }
}

// Checks that do not depend on the format; `fail(what, fix)` throws at the coupling's place.
template <class Fail>
void check_coupling(const CouplingConfig& c, const Fail& fail) {
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
  if (!(c.period > 0)) fail("coupling period " + number_text(c.period) + " is not positive",
                            "give the period in seconds (> 0)");
  if (c.status == FieldStatus::input && !c.transforms.empty())
    fail("an INPUT field takes no transformations", "remove them");
  if (c.status == FieldStatus::output)
    for (const std::string& t : c.transforms)
      if (t != "LOCTRANS")
        fail("an OUTPUT field takes only LOCTRANS, not " + t, "remove " + t);
}

// The exchanges (source field to target field, with their components) of a configuration: the
// same one twice is refused at the later coupling, naming the first. Also bounds the fields of
// the whole configuration (kMaxFieldsTotal), so that YAML aliases cannot multiply the work.
class Exchanges {
 public:
  static constexpr long long kMaxFieldsTotal = 100000;
  template <class Fail>
  void add(const CouplingConfig& c, const Fail& fail) {
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

 private:
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::string> seen_;
};

void apply_timeout_override(CouplingSetup& s) {
  const char* env = std::getenv("ESTUARY_COUPLE_TIMEOUT");
  if (!env || !*env) return;
  const auto v = to_number(env);
  if (!v || *v <= 0)
    throw Error("ESTUARY_COUPLE_TIMEOUT=" + std::string(env) + " is not a positive number",
                "environment", "give the time-out in seconds, or unset it");
  s.timeout = *v;
}

// ======================================= namcouple =========================================

using Tokens = std::vector<std::string>;

const std::map<std::string, const char*> kIgnoredBlocks{
    {"$SEQMODE", "obsolete in OASIS3-MCT"}, {"$CHANNEL", "obsolete in OASIS3-MCT"},
    {"$JOBNAME", "obsolete in OASIS3-MCT"}, {"$NBMODEL", "obsolete in OASIS3-MCT"},
    {"$INIDATE", "obsolete in OASIS3-MCT"}, {"$MODINFO", "obsolete in OASIS3-MCT"},
    {"$CALTYPE", "obsolete in OASIS3-MCT"}, {"$NUNITNO", "not needed by estuary"},
    {"$NMATXRD", "not needed by estuary"}};
const char* kBlocksText =
    "$NFIELDS, $RUNTIME, $NLOGPRT, $NMAPDEC, $NWGTOPT, $NNOREST, $STRINGS (and the obsolete "
    "$SEQMODE, $CHANNEL, $JOBNAME, $NBMODEL, $INIDATE, $MODINFO, $CALTYPE)";

class Namcouple {
 public:
  explicit Namcouple(const std::string& path) : path_(path) {
    const auto text = detail::read_config_file(path, "namcouple ");
    if (!text)
      throw Error("cannot open the namcouple file", "namcouple " + path,
                  "check the path and permissions");
    std::istringstream in(*text);
    for (std::string l; std::getline(in, l);) lines_.push_back(l);
  }

  CouplingSetup read();

 private:
  [[noreturn]] void fail(int line, const std::string& what, const std::string& fix = {}) const {
    throw Error(what, "namcouple " + path_ + ":" + std::to_string(line), fix);
  }
  int last_line() const { return std::max<int>(1, static_cast<int>(lines_.size())); }

  // The next line that is neither blank nor a comment, split into words; false at the end.
  bool next(Tokens& t) {
    while (pos_ < lines_.size()) {
      const std::string& l = lines_[pos_++];
      line_ = static_cast<int>(pos_);
      const auto first = l.find_first_not_of(" \t\r");
      if (first == std::string::npos || l[first] == '#') continue;
      std::istringstream words(l);
      t.clear();
      for (std::string w; words >> w;) t.push_back(w);
      if (t.empty()) continue;  // white space only, of kinds (\v, \f) the blank test above keeps
      return true;
    }
    return false;
  }

  // The next line of the $STRINGS entry that began at `entry`; `expected` says what it is.
  Tokens need(int entry, const std::string& expected) {
    Tokens t;
    if (!next(t))
      fail(last_line(), "end of file inside the $STRINGS entry of line " +
                            std::to_string(entry) + "; expected " + expected);
    if (t[0][0] == '$')
      fail(line_, "the $STRINGS entry of line " + std::to_string(entry) +
                      " is incomplete: expected " + expected + ", found " + t[0]);
    return t;
  }

  // The lines of the block opened by `key` (at line `open`), up to its $END.
  std::vector<std::pair<int, Tokens>> block(const std::string& key, int open) {
    std::vector<std::pair<int, Tokens>> out;
    Tokens t;
    while (true) {
      if (!next(t))
        fail(last_line(), "end of file inside the " + key + " block of line " +
                              std::to_string(open), "close it with $END");
      if (upper(t[0]) == "$END") return out;
      if (t[0][0] == '$')
        fail(line_, "expected $END to close the " + key + " block of line " +
                        std::to_string(open) + ", found " + t[0]);
      out.emplace_back(line_, t);
    }
  }

  // The one line of a single-value block, with `min`..`max` words.
  Tokens value(const std::string& key, int open, std::size_t min, std::size_t max,
               const std::string& expected) {
    auto lines = block(key, open);
    if (lines.empty()) fail(line_, key + " is empty: expected " + expected);
    if (lines.size() > 1)
      fail(lines[1].first, "unexpected second line in " + key + ": expected only " + expected);
    const auto& [l, t] = lines[0];
    if (t.size() < min || t.size() > max)
      fail(l, key + ": expected " + expected + ", found " + std::to_string(t.size()) +
                  " words");
    value_line_ = l;
    return t;
  }

  double number(int line, const std::string& word, const std::string& what) const {
    const auto v = to_number(word);
    if (!v) fail(line, "expected " + what + ", found " + quoted(word));
    return *v;
  }
  // `word` as an integer within [lo, hi] (the range of an int unless given).
  long long integer(int line, const std::string& word, const std::string& what,
                    long long lo = kIntMin, long long hi = kIntMax) const {
    return detail::integer_in(word, lo, hi, what,
                              [&](const std::string& m) { fail(line, m); });
  }

  void read_strings(CouplingSetup& s);
  CouplingConfig read_entry(const Tokens& t1, CouplingSetup& s);
  void read_line2(CouplingConfig& c, int entry);
  void read_transform(CouplingConfig& c, const std::string& name, int entry);

  std::string path_;
  std::vector<std::string> lines_;
  std::size_t pos_ = 0;
  int line_ = 0;        // number (1-based) of the line `next` returned last
  int value_line_ = 0;  // line of the last single-value block's value
  std::vector<std::size_t> once_;  // couplings with period ONCE (the run length, known at the end)
  std::vector<int> entry_lines_;
  Exchanges exchanges_;
};

CouplingSetup Namcouple::read() {
  CouplingSetup s;
  s.path = path_;
  std::map<std::string, int> seen;
  std::optional<long long> nfields;
  int nfields_line = 0;
  bool runtime = false;
  Tokens t;
  while (next(t)) {
    const int open = line_;
    const std::string key = upper(t[0]);
    if (key[0] != '$')
      fail(open, "unexpected " + quoted(t[0]) + " outside a $ block",
           "blocks start with a $KEYWORD line and end with $END; comment lines start with #");
    if (key == "$END") fail(open, "$END without an open block");
    if (t.size() > 1) fail(open, "unexpected " + quoted(t[1]) + " after " + key,
                           "put the block's values on the following lines");
    if (auto [it, fresh] = seen.emplace(key, open); !fresh)
      fail(open, key + " given twice (first at line " + std::to_string(it->second) + ")");

    if (key == "$STRINGS") {
      read_strings(s);
    } else if (auto ig = kIgnoredBlocks.find(key); ig != kIgnoredBlocks.end()) {
      block(key, open);
      s.notes.push_back(key + " (" + path_ + ":" + std::to_string(open) + ") is " + ig->second +
                        "; ignored");
    } else if (key == "$NFIELDS") {
      const Tokens v = value(key, open, 1, 1, "the number of $STRINGS entries");
      nfields = integer(value_line_, v[0], "the number of $STRINGS entries", 0, detail::kMaxCouplings);
      nfields_line = value_line_;
    } else if (key == "$RUNTIME") {
      const Tokens v = value(key, open, 1, 1, "the run length in seconds");
      s.runtime = number(value_line_, v[0], "the run length in seconds");
      if (!(s.runtime > 0)) fail(value_line_, "$RUNTIME must be positive", "give it in seconds");
      runtime = true;
    } else if (key == "$NLOGPRT") {
      const Tokens v = value(key, open, 1, 2, "one or two log levels");
      s.log_level = static_cast<int>(integer(value_line_, v[0], "the log level"));
      if (v.size() == 2) integer(value_line_, v[1], "the timer log level");
    } else if (key == "$NMAPDEC") {
      s.map_decomposition = value(key, open, 1, 1, "a decomposition name (e.g. decomp_1d)")[0];
    } else if (key == "$NWGTOPT") {
      s.weight_option = value(key, open, 1, 1, "a weight option (e.g. abort_on_bad_index)")[0];
    } else if (key == "$NNOREST") {
      const std::string v = upper(value(key, open, 1, 1, "T or F")[0]);
      if (v == "T" || v == ".TRUE." || v == "TRUE") s.no_restart = true;
      else if (v == "F" || v == ".FALSE." || v == "FALSE") s.no_restart = false;
      else fail(value_line_, "$NNOREST: expected T or F, found " + quoted(v));
    } else {
      fail(open, "unknown block " + key, std::string("known blocks: ") + kBlocksText);
    }
  }
  if (!runtime)
    fail(last_line(), "no $RUNTIME block", "add $RUNTIME with the run length in seconds");
  if (!nfields)
    fail(last_line(), "no $NFIELDS block",
         "add $NFIELDS with the number of $STRINGS entries (OASIS3-MCT requires it)");
  if (!seen.count("$STRINGS"))
    fail(last_line(), "no $STRINGS block", "add $STRINGS with one entry per coupling");
  // OASIS reads at most $NFIELDS entries and stops with "NFIELDS too small" if more follow.
  if (static_cast<long long>(s.couplings.size()) > *nfields)
    fail(entry_lines_[static_cast<std::size_t>(*nfields)],
         "more $STRINGS entries than $NFIELDS (" + std::to_string(*nfields) + ", line " +
             std::to_string(nfields_line) + ") allows",
         "raise $NFIELDS to at least " + std::to_string(s.couplings.size()));
  if (static_cast<long long>(s.couplings.size()) < *nfields)
    s.notes.push_back("$NFIELDS is " + std::to_string(*nfields) + " but $STRINGS has " +
                      std::to_string(s.couplings.size()) + " entries (OASIS reads it as a maximum)");
  for (std::size_t i : once_) s.couplings[i].period = s.runtime;
  for (const CouplingConfig& c : s.couplings)
    if (c.period > s.runtime)
      s.notes.push_back(c.origin + ": period " + number_text(c.period) +
                        " s exceeds $RUNTIME: the field is never exchanged");
  apply_timeout_override(s);
  return s;
}

void Namcouple::read_strings(CouplingSetup& s) {
  const int open = line_;
  Tokens t;
  while (true) {
    if (!next(t)) fail(last_line(), "end of file inside $STRINGS (line " + std::to_string(open) +
                                        ")", "close it with $END");
    if (upper(t[0]) == "$END") return;
    if (t[0][0] == '$')
      fail(line_, "expected a $STRINGS entry or $END, found " + t[0],
           "close $STRINGS with $END before the next block");
    if (static_cast<long long>(s.couplings.size()) >= detail::kMaxCouplings)
      fail(line_, "more than " + std::to_string(detail::kMaxCouplings) + " $STRINGS entries",
           "estuary reads at most that many couplings");
    entry_lines_.push_back(line_);
    const int l1 = line_;
    CouplingConfig c = read_entry(t, s);
    exchanges_.add(c, [&](const std::string& what, const std::string& fix) { fail(l1, what, fix); });
    s.couplings.push_back(std::move(c));
  }
}

std::vector<std::string> split_fields(const std::string& word) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto colon = word.find(':', start);
    out.push_back(word.substr(start, colon - start));
    if (colon == std::string::npos) return out;
    start = colon + 1;
  }
}

CouplingConfig Namcouple::read_entry(const Tokens& t1, CouplingSetup& s) {
  const int l1 = line_;
  const std::string form = "'SRC DST 1 period ntrans restart.nc STATUS'";
  CouplingConfig c;
  c.origin = path_ + ":" + std::to_string(l1);
  // OASIS's short OUTPUT form names no restart file: "SRC DST 1 period ntrans OUTPUT".
  const bool short_output = t1.size() == 6 && upper(t1[5]) == "OUTPUT";
  if (t1.size() < 7 && !short_output)
    fail(l1, "expected " + form + ", found " + std::to_string(t1.size()) + " words");
  if (t1.size() > 7) fail(l1, "unexpected " + quoted(t1[7]) + " after the status of " + form);

  c.src_fields = split_fields(t1[0]);
  c.dst_fields = split_fields(t1[1]);
  for (const auto* list : {&c.src_fields, &c.dst_fields})
    for (const std::string& f : *list)
      if (f.empty())
        fail(l1, "empty field name in the colon list " +
                     quoted(list == &c.src_fields ? t1[0] : t1[1]));
  integer(l1, t1[2], "the field number (obsolete, usually 1)");
  if (upper(t1[3]) == "ONCE") {
    once_.push_back(s.couplings.size());
    c.period = 1;  // set to $RUNTIME once it is known
  } else {
    c.period = number(l1, t1[3], "the coupling period in seconds");
  }
  // Each of the 8 transformations at most once.
  const long long ntrans = integer(l1, t1[4], "the number of transformations", 0,
                                   static_cast<long long>(kTransforms.size()));

  const std::string status = short_output ? "OUTPUT" : t1[6];
  bool renamed = false;
  const auto st = status_named(status, renamed);
  if (!st)
    fail(l1, "unknown field status " + quoted(status), std::string("use ") + kStatusesText);
  c.status = *st;
  if (renamed)
    s.notes.push_back(c.origin + ": " + upper(status) + " read as " + name_of(c.status));
  const std::string file = short_output ? "" : t1[5];

  auto fail_entry = [&](const std::string& what, const std::string& fix) { fail(l1, what, fix); };
  if (c.status == FieldStatus::input) {
    // OASIS reads nothing after line 1 of an INPUT entry.
    c.input_file = file;
    if (ntrans != 0)
      fail(l1, "an INPUT entry has no transformations: expected 0, found " + t1[4],
           "write 'SRC DST 1 period 0 file.nc INPUT'");
    check_coupling(c, fail_entry);
    return c;
  }
  c.restart_file = file;
  if ((c.status == FieldStatus::exported || c.status == FieldStatus::expout) && ntrans == 0)
    fail(l1, upper(status) + " needs at least one transformation (OASIS3-MCT aborts otherwise)",
         "add e.g. LOCTRANS with INSTANT");

  read_line2(c, l1);
  if (c.status != FieldStatus::output) {
    // OASIS3-MCT reads IGNORED/IGNOUT entries without line 3 while older files have it: a
    // line "P|R n P|R n" is taken as line 3 for them, and required for EXPORTED/EXPOUT.
    const std::size_t save_pos = pos_;
    const int save_line = line_;
    Tokens t3 = need(l1, "line 3 'P|R overlap P|R overlap'");
    auto pr = [](const std::string& w) { return upper(w) == "P" || upper(w) == "R"; };
    if (renamed && !(t3.size() == 4 && pr(t3[0]))) {
      pos_ = save_pos;
      line_ = save_line;
    } else {
      if (t3.size() != 4 || !pr(t3[0]) || !pr(t3[2]))
        fail(line_, "expected line 3 'P|R overlap P|R overlap' (periodic or regional grids)");
      GridRef* g[2] = {&c.src_grid, &c.dst_grid};
      for (int k = 0; k < 2; ++k) {
        g[k]->periodicity = upper(t3[2 * k]) == "P" ? Periodicity::periodic : Periodicity::regional;
        const long long ov = integer(line_, t3[2 * k + 1], "the number of overlapping columns", 0);
        g[k]->overlap = static_cast<int>(ov);
      }
    }
  }
  if (ntrans > 0) {
    const Tokens names = need(l1, std::to_string(ntrans) + " transformation name(s)");
    const int lnames = line_;
    if (static_cast<long long>(names.size()) != ntrans)
      fail(lnames, "expected " + std::to_string(ntrans) + " transformation name(s) (line " +
                       std::to_string(l1) + " says " + t1[4] + "), found " +
                       std::to_string(names.size()));
    for (const std::string& n : names) {
      const std::string up = upper(n);
      if (is_obsolete_transform(up))
        fail(lnames, "transformation " + up + " is obsolete (OASIS3 only)",
             "OASIS3-MCT and estuary support LOCTRANS, MAPPING, SCRIPR, CONSERV, BLASOLD, "
             "BLASNEW, CHECKIN and CHECKOUT");
      if (!is_transform(up))
        fail(lnames, "unknown transformation " + quoted(n),
             "use LOCTRANS, MAPPING, SCRIPR, CONSERV, BLASOLD, BLASNEW, CHECKIN or CHECKOUT");
      if (std::find(c.transforms.begin(), c.transforms.end(), up) != c.transforms.end())
        fail(lnames, "transformation " + up + " listed twice");
      c.transforms.push_back(up);
    }
    for (const std::string& n : c.transforms) read_transform(c, n, l1);
  }
  check_coupling(c, fail_entry);
  return c;
}

void Namcouple::read_line2(CouplingConfig& c, int entry) {
  const std::string form = "line 2 'nx_src ny_src nx_dst ny_dst srcgrid dstgrid [LAG=t] [SEQ=n]'";
  const Tokens t = need(entry, form);
  const int l = line_;
  auto is_option = [](const std::string& w) {
    const std::string up = upper(w);
    return up.rfind("LAG=", 0) == 0 || up.rfind("SEQ=", 0) == 0;
  };
  // As in OASIS: two words, or a third word LAG=/SEQ=, mean grid names without sizes.
  std::size_t opt = 2;
  if (t.size() < 2) fail(l, "expected " + form);
  if (t.size() >= 3 && !is_option(t[2])) {
    if (t.size() < 6) fail(l, "expected " + form + ", found " + std::to_string(t.size()) + " words");
    std::int64_t* sizes[4] = {&c.src_grid.nx, &c.src_grid.ny, &c.dst_grid.nx, &c.dst_grid.ny};
    for (int k = 0; k < 4; ++k) {
      // A grid has at least one point; 0 is no "unknown" here (leave the sizes out instead).
      *sizes[k] = integer(l, t[static_cast<std::size_t>(k)], "a grid size", 1, kSizeMax);
    }
    for (const GridRef* g : {&c.src_grid, &c.dst_grid})
      if (!detail::mul_size(g->nx, g->ny))
        fail(l, "grid size " + std::to_string(g->nx) + " x " + std::to_string(g->ny) +
                    " overflows a 64-bit integer");
    c.src_grid.name = t[4];
    c.dst_grid.name = t[5];
    opt = 6;
  } else {
    c.src_grid.name = t[0];
    c.dst_grid.name = t[1];
  }
  bool lag = false, seq = false;
  for (std::size_t k = opt; k < t.size(); ++k) {
    const std::string up = upper(t[k]);
    // The value after "LAG=" or "SEQ="; a word shorter than 4 characters is neither option.
    const std::string v = t[k].size() >= 4 ? t[k].substr(4) : std::string();
    if (up.rfind("LAG=", 0) == 0 && !lag) {
      c.lag = number(l, v, "LAG=seconds");
      lag = true;
    } else if (up.rfind("SEQ=", 0) == 0 && !seq) {
      c.seq = static_cast<int>(integer(l, v, "SEQ=n", 0));
      seq = true;
    } else {
      fail(l, "unexpected " + quoted(t[k]) + " in " + form,
           "after the grid names only LAG=seconds and SEQ=n may follow, once each");
    }
  }
}

void Namcouple::read_transform(CouplingConfig& c, const std::string& name, int entry) {
  if (name == "LOCTRANS") {
    const Tokens t = need(entry, "the LOCTRANS operation (INSTANT, ACCUMUL, AVERAGE, T_MIN, T_MAX)");
    const auto op = loctrans_by_name(t[0]);
    if (t.size() != 1 || !op)
      fail(line_, "expected one LOCTRANS operation (INSTANT, ACCUMUL, AVERAGE, T_MIN or T_MAX), "
                  "found " + quoted(t[0]) + (t.size() > 1 ? " ..." : ""));
    c.loctrans = *op;
  } else if (name == "MAPPING") {
    const Tokens t = need(entry, "the MAPPING line 'file.nc [src|dst] [bfb|sum|opt]'");
    MappingSpec m;
    m.file = t[0];
    bool loc = false, order = false;
    for (std::size_t k = 1; k < t.size(); ++k) {
      if (auto v = location_named(t[k]); v && !loc) {
        m.location = *v;
        loc = true;
      } else if (auto o = order_named(t[k]); o && !order) {
        m.order = *o;
        order = true;
      } else {
        fail(line_, "unexpected " + quoted(t[k]) + " in the MAPPING line",
             "expected 'file.nc [src|dst] [bfb|sum|opt]', each option at most once");
      }
    }
    c.mapping = m;
  } else if (name == "SCRIPR") {
    const Tokens t = need(entry, "the SCRIPR line, e.g. 'DISTWGT LR SCALAR LATLON 1 4'");
    const int l = line_;
    ScriprSpec s;
    s.method = upper(t[0]);
    auto fail_here = [&](const std::string& what, const std::string& fix) { fail(l, what, fix); };
    if (s.method != "BILINEAR" && s.method != "DISTWGT" && s.method != "CONSERV")
      check_scripr(s, fail_here);  // rejects the method before its words are counted
    const std::size_t want = s.method == "BILINEAR" ? 5 : s.method == "DISTWGT" ? 6 : 7;
    const char* form = s.method == "BILINEAR" ? "'BILINEAR LR SCALAR LATLON bins'"
                       : s.method == "DISTWGT" ? "'DISTWGT LR SCALAR LATLON bins neighbours'"
                                               : "'CONSERV LR SCALAR LATLON bins FRACNNEI [FIRST]'";
    const bool short_conserv = s.method == "CONSERV" && t.size() == 6;  // order defaults to FIRST
    if (t.size() != want && !short_conserv)
      fail(l, std::string("expected the SCRIPR line ") + form + ", found " +
                  std::to_string(t.size()) + " words");
    s.grid_type = t[1];
    s.field_type = t[2];
    s.restriction = t[3];
    s.bins = static_cast<int>(integer(l, t[4], "the number of SCRIPR search bins", 1));
    if (s.method == "DISTWGT") s.neighbors = static_cast<int>(integer(l, t[5], "the number of neighbours", 1));
    if (s.method == "CONSERV") {
      s.normalization = t[5];
      s.order = t.size() == 7 ? t[6] : "FIRST";
    }
    check_scripr(s, fail_here);
    c.scripr = s;
  } else if (name == "CONSERV") {
    const Tokens t = need(entry, "the CONSERV line 'GLOBAL|GLBPOS|BASBAL|BASPOS [method]'");
    const auto mode = conserv_mode_named(t[0]);
    if (!mode)
      fail(line_, "unknown CONSERV mode " + quoted(t[0]), "use GLOBAL, GLBPOS, BASBAL or BASPOS");
    ConservSpec cs;
    cs.mode = *mode;
    if (t.size() > 2) fail(line_, "unexpected " + quoted(t[2]) + " in the CONSERV line");
    if (t.size() == 2) {
      const auto m = sum_method_named(t[1]);
      if (!m)
        fail(line_, "unknown CONSERV sum method " + quoted(t[1]),
             std::string("use ") + kSumMethodsText);
      cs.method = *m;
    }
    c.conserv = cs;
  } else if (name == "BLASOLD" || name == "BLASNEW") {
    const Tokens t = need(entry, "the " + name + " line 'scale nterms'");
    const int l = line_;
    if (t.size() != 2) fail(l, "expected the " + name + " line 'scale nterms'");
    BlasSpec b;
    b.scale = number(l, t[0], "the " + name + " scale factor");
    const long long n = integer(l, t[1], "the number of " + name + " terms", 0);
    for (long long k = 0; k < n; ++k) {
      const Tokens term = need(entry, "the " + name + " term 'CONSTANT value'");
      if (upper(term[0]) != "CONSTANT")
        fail(line_, name + " term " + quoted(term[0]) + " is not supported",
             "only 'CONSTANT value' terms are (as in OASIS3-MCT)");
      if (term.size() != 2) fail(line_, "expected the " + name + " term 'CONSTANT value'");
      b.add += number(line_, term[1], "the " + name + " constant");
    }
    (name == "BLASOLD" ? c.blasold : c.blasnew) = b;
  } else {  // CHECKIN, CHECKOUT: OASIS reads and ignores their line (e.g. "INT=1")
    need(entry, "the " + name + " line (e.g. INT=1)");
    (name == "CHECKIN" ? c.checkin : c.checkout) = true;
  }
}

// ========================================= YAML ============================================

class Yaml {
 public:
  explicit Yaml(const std::string& path) : path_(path) {}
  CouplingSetup read();

 private:
  std::string where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    return path_ + (m.is_null() ? std::string() : ":" + std::to_string(m.line + 1));
  }
  [[noreturn]] void fail(const YAML::Node& at, const std::string& what,
                         const std::string& fix = {}) const {
    throw Error(what, where(at), fix);
  }

  // Checks that `map` is a mapping with only `known` keys, each once.
  void keys(const YAML::Node& map, const std::string& ctx,
            std::initializer_list<const char*> known) const {
    if (!map.IsMap()) fail(map, ctx + " must be a mapping (key: value)");
    std::vector<std::string> seen;
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      if (std::find_if(known.begin(), known.end(), [&](const char* s) { return k == s; }) ==
          known.end()) {
        std::string list;
        for (const char* s : known) list += (list.empty() ? "" : ", ") + std::string(s);
        fail(kv.first, "unknown key " + quoted(k) + " in " + ctx, "known keys: " + list);
      }
      if (std::find(seen.begin(), seen.end(), k) != seen.end())
        fail(kv.first, "key " + quoted(k) + " given twice in " + ctx);
      seen.push_back(k);
    }
  }
  YAML::Node required(const YAML::Node& map, const char* key, const std::string& ctx) const {
    const YAML::Node v = map[key];
    if (!v) fail(map, "missing required key " + quoted(key) + " in " + ctx);
    return v;
  }
  std::string scalar(const YAML::Node& v, const std::string& key) const {
    if (!v.IsScalar()) fail(v, key + " must be a single value");
    return v.Scalar();
  }
  double number(const YAML::Node& v, const std::string& key) const {
    const auto x = to_number(scalar(v, key));
    if (!x) fail(v, key + " must be a number, found " + quoted(v.Scalar()));
    return *x;
  }
  // An integer within [lo, hi] (the range of an int unless given).
  long long integer(const YAML::Node& v, const std::string& key, long long lo = kIntMin,
                    long long hi = kIntMax) const {
    const std::string text = scalar(v, key);
    if (!detail::parse_integer(text) && text.find_first_not_of("+-0123456789") != std::string::npos)
      fail(v, key + " must be an integer, found " + quoted(text));
    return detail::integer_in(text, lo, hi, key, [&](const std::string& m) { fail(v, m); });
  }
  bool boolean(const YAML::Node& v, const std::string& key) const {
    scalar(v, key);
    bool b = false;
    if (!YAML::convert<bool>::decode(v, b))
      fail(v, key + " must be true or false, found " + quoted(v.Scalar()));
    return b;
  }

  CouplingConfig coupling(const YAML::Node& n, const std::string& ctx);
  void side(const YAML::Node& n, const std::string& ctx, std::vector<std::string>& fields,
            std::string& component, GridRef& grid);
  void transform(const YAML::Node& item, const std::string& ctx, CouplingConfig& c);

  std::string path_;
};

CouplingSetup Yaml::read() {
  YAML::Node loaded;
  const auto text = detail::read_config_file(path_);
  if (!text) throw Error("cannot open the configuration file", path_, "check the path and permissions");
  try {
    loaded = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw Error("YAML syntax error: " + e.msg,
                path_ + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)));
  }
  if (!loaded) throw Error("the configuration file is empty", path_, "see docs/configuration.md");
  const YAML::Node& root = loaded;  // const: lookups of absent keys must not add them
  keys(root, "the configuration", {"runtime", "log_level", "no_restart", "map_decomposition",
                                   "weight_option", "timeout", "couplings"});
  CouplingSetup s;
  s.path = path_;
  const YAML::Node rt = required(root, "runtime", "the configuration");
  s.runtime = number(rt, "runtime");
  if (!(s.runtime > 0)) fail(rt, "runtime must be positive", "give the run length in seconds");
  if (const auto v = root["log_level"]) s.log_level = static_cast<int>(integer(v, "log_level"));
  if (const auto v = root["no_restart"]) s.no_restart = boolean(v, "no_restart");
  if (const auto v = root["map_decomposition"]) s.map_decomposition = scalar(v, "map_decomposition");
  if (const auto v = root["weight_option"]) s.weight_option = scalar(v, "weight_option");
  if (const auto v = root["timeout"]) {
    s.timeout = number(v, "timeout");
    if (!(s.timeout > 0)) fail(v, "timeout must be positive", "give it in seconds");
  }
  const YAML::Node list = required(root, "couplings", "the configuration");
  if (!list.IsSequence()) fail(list, "couplings must be a list (items start with '- ')");
  if (static_cast<long long>(list.size()) > detail::kMaxCouplings)
    fail(list, std::to_string(list.size()) + " couplings, more than the " +
                   std::to_string(detail::kMaxCouplings) + " estuary reads");
  Exchanges exchanges;
  for (std::size_t i = 0; i < list.size(); ++i) {
    CouplingConfig c = coupling(list[i], "couplings[" + std::to_string(i) + "]");
    exchanges.add(c, [&](const std::string& what, const std::string& fix) {
      fail(list[i], "couplings[" + std::to_string(i) + "]: " + what, fix);
    });
    s.couplings.push_back(std::move(c));
  }
  apply_timeout_override(s);
  return s;
}

void Yaml::side(const YAML::Node& n, const std::string& ctx, std::vector<std::string>& fields,
                std::string& component, GridRef& grid) {
  keys(n, ctx, {"component", "field", "fields", "grid", "nx", "ny", "periodic", "overlap"});
  const YAML::Node one = n["field"], many = n["fields"];
  if (one && many) fail(n, ctx + " has both 'field' and 'fields'", "give one of them");
  if (!one && !many) fail(n, "missing required key 'fields' (or 'field') in " + ctx);
  if (one) {
    fields = {scalar(one, ctx + ".field")};
  } else {
    if (!many.IsSequence() || many.size() == 0)
      fail(many, ctx + ".fields must be a non-empty list of names", "e.g. fields: [SST, SSS]");
    if (static_cast<long long>(many.size()) > detail::kMaxFieldsPerSide)
      fail(many, ctx + ".fields lists " + std::to_string(many.size()) + " fields, more than the " +
                     std::to_string(detail::kMaxFieldsPerSide) + " estuary takes in one coupling");
    for (const auto& f : many) fields.push_back(scalar(f, ctx + ".fields"));
  }
  for (const std::string& f : fields)
    if (f.empty()) fail(one ? one : many, "empty field name in " + ctx);
  if (const auto v = n["component"]) component = scalar(v, ctx + ".component");
  if (const auto v = n["grid"]) grid.name = scalar(v, ctx + ".grid");
  // Grid sizes: both or neither, each at least 1, and their product within 64 bits.
  if (const auto v = n["nx"]) grid.nx = integer(v, ctx + ".nx", 1, kSizeMax);
  if (const auto v = n["ny"]) grid.ny = integer(v, ctx + ".ny", 1, kSizeMax);
  if (n["nx"] && !n["ny"]) fail(n["nx"], ctx + " gives nx without ny", "give both nx and ny, or neither");
  if (n["ny"] && !n["nx"]) fail(n["ny"], ctx + " gives ny without nx", "give both nx and ny, or neither");
  if (grid.nx > 0 && !detail::mul_size(grid.nx, grid.ny))
    fail(n["ny"], ctx + " grid size " + std::to_string(grid.nx) + " x " + std::to_string(grid.ny) +
                      " overflows a 64-bit integer");
  if (const auto v = n["periodic"])
    grid.periodicity = boolean(v, ctx + ".periodic") ? Periodicity::periodic : Periodicity::regional;
  if (const auto v = n["overlap"]) {
    grid.overlap = static_cast<int>(integer(v, ctx + ".overlap", 0));
  }
}

CouplingConfig Yaml::coupling(const YAML::Node& n, const std::string& ctx) {
  keys(n, ctx, {"source", "target", "period", "lag", "seq", "status", "restart", "file",
                "transforms"});
  CouplingConfig c;
  c.origin = where(n);
  if (const auto v = n["status"]) {
    bool renamed = false;
    const auto st = status_named(scalar(v, ctx + ".status"), renamed);
    if (!st) fail(v, "unknown " + ctx + ".status " + quoted(v.Scalar()),
                  std::string("use ") + kStatusesText);
    c.status = *st;
  }
  side(required(n, "source", ctx), ctx + ".source", c.src_fields, c.src_component, c.src_grid);
  side(required(n, "target", ctx), ctx + ".target", c.dst_fields, c.dst_component, c.dst_grid);
  // Grids every exchanged field needs; an OUTPUT field has no target and INPUT no source.
  if (c.status != FieldStatus::input && c.src_grid.name.empty())
    fail(n["source"], "missing required key 'grid' in " + ctx + ".source");
  if ((c.status == FieldStatus::exported || c.status == FieldStatus::expout) &&
      c.dst_grid.name.empty())
    fail(n["target"], "missing required key 'grid' in " + ctx + ".target");
  c.period = number(required(n, "period", ctx), ctx + ".period");
  if (const auto v = n["lag"]) c.lag = number(v, ctx + ".lag");
  if (const auto v = n["seq"]) c.seq = static_cast<int>(integer(v, ctx + ".seq", 0));
  if (const auto v = n["restart"]) {
    if (c.status == FieldStatus::input) fail(v, "an INPUT field has no restart file", "remove 'restart'");
    c.restart_file = scalar(v, ctx + ".restart");
  }
  if (const auto v = n["file"]) {
    if (c.status != FieldStatus::input && c.status != FieldStatus::output)
      fail(v, ctx + ".file is only for status input or output", "the restart file is 'restart'");
    c.input_file = scalar(v, ctx + ".file");
  }
  if (c.status == FieldStatus::input && c.input_file.empty())
    fail(n, "missing required key 'file' in " + ctx + " (the file an INPUT field is read from)");
  if (const auto list = n["transforms"]) {
    if (!list.IsSequence()) fail(list, ctx + ".transforms must be a list");
    for (std::size_t i = 0; i < list.size(); ++i)
      transform(list[i], ctx + ".transforms[" + std::to_string(i) + "]", c);
  }
  check_coupling(c, [&](const std::string& what, const std::string& fix) {
    fail(n, ctx + ": " + what, fix);
  });
  return c;
}

void Yaml::transform(const YAML::Node& item, const std::string& ctx, CouplingConfig& c) {
  // An item is "- checkin" or a mapping with one key: the transformation's name.
  std::string name;
  YAML::Node v;  // the settings; assigned once, while still empty
  const bool alone = item.IsScalar();
  if (alone) {
    name = item.Scalar();
    if (name != "checkin" && name != "checkout")
      fail(item, ctx + ": " + quoted(name) + " needs its settings",
           "write e.g. '- loctrans: average' (only checkin and checkout stand alone)");
  } else {
    if (!item.IsMap() || item.size() != 1)
      fail(item, ctx + " must have exactly one key, the transformation's name",
           "e.g. '- mapping: {file: w.nc}'");
    name = item.begin()->first.Scalar();
    v = item.begin()->second;
  }
  const std::string up = upper(name);
  const YAML::Node at = item.IsMap() ? item.begin()->first : item;
  if (!is_transform(up) || name != lower(name))
    fail(at, "unknown transformation " + quoted(name) + " in " + ctx,
         "use loctrans, mapping, scripr, conserv, blasold, blasnew, checkin or checkout");
  if (std::find(c.transforms.begin(), c.transforms.end(), up) != c.transforms.end())
    fail(at, "transformation " + name + " listed twice");
  c.transforms.push_back(up);
  const std::string key = ctx + "." + name;

  if (up == "LOCTRANS") {
    const auto op = loctrans_by_name(scalar(v, key));
    if (!op) fail(v, "unknown " + key + " " + quoted(v.Scalar()),
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
        if (!l) fail(x, "unknown " + key + ".location " + quoted(x.Scalar()), "use src or dst");
        m.location = *l;
      }
      if (const auto x = v["order"]) {
        const auto o = order_named(scalar(x, key + ".order"));
        if (!o) fail(x, "unknown " + key + ".order " + quoted(x.Scalar()), "use bfb or sum (opt)");
        m.order = *o;
      }
    }
    c.mapping = m;
  } else if (up == "SCRIPR") {
    keys(v, key, {"method", "grid_type", "field_type", "restriction", "bins", "neighbors",
                  "normalization", "order"});
    ScriprSpec s;
    s.method = upper(scalar(required(v, "method", key), key + ".method"));
    s.grid_type = v["grid_type"] ? scalar(v["grid_type"], key + ".grid_type") : "LR";
    s.field_type = v["field_type"] ? scalar(v["field_type"], key + ".field_type") : "SCALAR";
    s.restriction = v["restriction"] ? scalar(v["restriction"], key + ".restriction") : "LATLON";
    if (const auto x = v["bins"]) s.bins = static_cast<int>(integer(x, key + ".bins", 1));
    if (const auto x = v["neighbors"]) {
      if (s.method != "DISTWGT") fail(x, key + ".neighbors is for method distwgt only");
      s.neighbors = static_cast<int>(integer(x, key + ".neighbors", 1));
    }
    for (const char* k : {"normalization", "order"})
      if (v[k] && s.method != "CONSERV") fail(v[k], key + "." + k + " is for method conserv only");
    if (s.method == "CONSERV") {
      s.normalization = scalar(required(v, "normalization", key), key + ".normalization");
      s.order = v["order"] ? scalar(v["order"], key + ".order") : "FIRST";
    }
    check_scripr(s, [&](const std::string& what, const std::string& fix) { fail(v, what, fix); });
    c.scripr = s;
  } else if (up == "CONSERV") {
    ConservSpec cs;
    if (!v.IsScalar()) {
      keys(v, key, {"mode", "method"});
      if (const auto x = v["method"]) {
        const auto m = sum_method_named(scalar(x, key + ".method"));
        if (!m) fail(x, "unknown " + key + ".method " + quoted(x.Scalar()),
                     std::string("use ") + kSumMethodsText);
        cs.method = *m;
      }
    }
    // Never reassign a YAML::Node: assignment rebinds the node inside the loaded tree.
    const YAML::Node mode = v.IsScalar() ? v : required(v, "mode", key);
    const auto md = conserv_mode_named(scalar(mode, key + ".mode"));
    if (!md) fail(mode, "unknown " + key + ".mode " + quoted(mode.Scalar()),
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
      fail(v, key + ": false is not meaningful here", "remove the item to switch it off");
    (up == "CHECKIN" ? c.checkin : c.checkout) = true;
  }
}

}  // namespace

// ======================================== public ===========================================

CouplingSetup read_namcouple(const std::string& path) { return Namcouple(path).read(); }

CouplingSetup read_coupling_yaml(const std::string& path) { return Yaml(path).read(); }

CouplingSetup read_coupling_config(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : lower(path.substr(dot));
  if (ext == ".yaml" || ext == ".yml") return read_coupling_yaml(path);
  const auto text = detail::read_config_file(path);
  if (!text) throw Error("cannot open the configuration file", path, "check the path and permissions");
  std::istringstream in(*text);
  for (std::string l; std::getline(in, l);) {
    const auto first = l.find_first_not_of(" \t\r");
    if (first != std::string::npos && l[first] == '$') return read_namcouple(path);
  }
  return read_coupling_yaml(path);
}

const char* name_of(FieldStatus s) {
  switch (s) {
    case FieldStatus::exported: return "EXPORTED";
    case FieldStatus::expout: return "EXPOUT";
    case FieldStatus::input: return "INPUT";
    case FieldStatus::output: return "OUTPUT";
  }
  return "?";
}

const char* name_of(LocTrans t) {
  switch (t) {
    case LocTrans::instant: return "INSTANT";
    case LocTrans::accumul: return "ACCUMUL";
    case LocTrans::average: return "AVERAGE";
    case LocTrans::t_min: return "T_MIN";
    case LocTrans::t_max: return "T_MAX";
  }
  return "?";
}

bool CouplingConfig::operator==(const CouplingConfig& o) const {
  auto key = [](const CouplingConfig& c) {
    return std::tie(c.src_fields, c.dst_fields, c.period, c.restart_file, c.input_file, c.status,
                    c.src_grid, c.dst_grid, c.lag, c.seq, c.transforms, c.loctrans, c.mapping,
                    c.scripr, c.conserv, c.blasold, c.blasnew, c.checkin, c.checkout,
                    c.src_component, c.dst_component);
  };
  return key(*this) == key(o);
}

bool CouplingSetup::operator==(const CouplingSetup& o) const {
  auto key = [](const CouplingSetup& s) {
    return std::tie(s.runtime, s.log_level, s.no_restart, s.map_decomposition, s.weight_option,
                    s.timeout, s.couplings);
  };
  return key(*this) == key(o);
}

}  // namespace estuary
