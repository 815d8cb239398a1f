// The OASIS3-MCT 4.0 and 5.0 namcouple reader (read_namcouple): fills the CouplingSetup the YAML
// reader fills, over the shared vocabulary and checks of config_checks.hpp.
#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/cf_calendar.hpp"
#include "common/checked.hpp"
#include "couple/config_checks.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "estuary/weightgen.hpp"

namespace estuary {

namespace {

using namespace detail::config;

// ======================================= namcouple =========================================
// Read as OASIS3-MCT 4.0 and 5.0 read it (mod_oasis_namcouple.F90): a keyword is the first word
// of a line, found by scanning the whole file, and its value is the next line that is not a
// comment; $END is optional after every block (the end of the file closes $STRINGS); lines that
// no keyword reads (an "END" without $, the rest of an obsolete block) are skipped with a note.
// Words are case-sensitive, as in OASIS. Where OASIS reads a word with a Fortran format that
// would misread it, estuary refuses it naming the line; where OASIS ignores extra words, estuary
// ignores them too and says so in the notes.

using Tokens = std::vector<std::string>;

// Every keyword OASIS3-MCT knows (it aborts on any other $WORD), and for those estuary does not
// use, why.
const std::map<std::string, const char*> kKeywords{
    {"$NFIELDS", nullptr}, {"$RUNTIME", nullptr}, {"$STRINGS", nullptr}, {"$END", nullptr},
    {"$NLOGPRT", nullptr}, {"$NNOREST", nullptr}, {"$NMAPDEC", nullptr}, {"$NWGTOPT", nullptr},
    {"$NMATXRD", "read and checked; estuary reads weight files its own way"},
    {"$NUNITNO", "not needed by estuary (Fortran unit numbers)"},
    {"$NCDFTYP", "read; estuary chooses the format of the files it writes itself"},
    {"$NTHRESH", "read; estuary's CONSERV has no latitude thresholds"},
    {"$STHRESH", "read; estuary's CONSERV has no latitude thresholds"},
    {"$SEQMODE", "obsolete in OASIS3-MCT"}, {"$CHANNEL", "obsolete in OASIS3-MCT"},
    {"$JOBNAME", "obsolete in OASIS3-MCT"}, {"$NBMODEL", "obsolete in OASIS3-MCT"},
    {"$MODINFO", "obsolete in OASIS3-MCT"},
    // Obsolete in OASIS3-MCT, which skips their values; estuary reads them, when they parse,
    // for the time axis of its files (read_start_date).
    {"$INIDATE", nullptr}, {"$CALTYPE", nullptr}};

std::string keywords_text() {
  std::string out;
  for (const auto& [k, why] : kKeywords) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// Words a template leaves for a script to fill ("<runtime>", "${RUNTIME}", "@RUNTIME@").
bool is_template_word(const std::string& w) {
  return w.find('<') != std::string::npos || w.find('>') != std::string::npos ||
         w.find("${") != std::string::npos || w.find("$(") != std::string::npos ||
         (w.size() > 2 && w.front() == '@' && w.back() == '@');
}
// A shell variable inside a value ("$CPL_FREQ"): a $ followed by a letter or _.
bool has_shell_variable(const std::string& w) {
  for (std::size_t k = 0; k + 1 < w.size(); ++k)
    if (w[k] == '$' && (std::isalpha(static_cast<unsigned char>(w[k + 1])) || w[k + 1] == '_')) return true;
  return false;
}
// A bare name where a number is expected ("totalruntime", "DUR_SECS", "RUN_LENGTH").
bool is_name_word(const std::string& w) {
  bool letter = false;
  for (char ch : w) {
    if (std::isalpha(static_cast<unsigned char>(ch))) letter = true;
    else if (ch != '_' && !std::isdigit(static_cast<unsigned char>(ch))) return false;
  }
  return letter;
}

class Namcouple {
 public:
  explicit Namcouple(const std::string& path) : path_(path) {
    const auto text = detail::read_config_file(path, "namcouple ");
    if (!text)
      throw Error("cannot open the namcouple file", "namcouple " + path,
                  "check the path and permissions");
    std::istringstream in(*text);
    int no = 0;
    for (std::string l; std::getline(in, l);) {
      ++no;
      if (!l.empty() && l.back() == '\r') l.pop_back();  // CR LF line ends, as gfortran reads them
      // OASIS's comment: a line whose first non-blank character is #, or a blank line (blanks
      // are spaces: Fortran's ADJUSTL and OASIS's word split know no other).
      const auto first = l.find_first_not_of(' ');
      if (first == std::string::npos || l[first] == '#') continue;
      if (l.size() > 5000) fail(no, "line longer than the 5000 characters OASIS3-MCT reads");
      Tokens t;
      for (std::size_t b = first; b < l.size();) {
        const auto e = std::min(l.find(' ', b), l.size());
        t.emplace_back(l, b, e - b);
        b = l.find_first_not_of(' ', e);
        if (b == std::string::npos) break;
      }
      // A TAB is no blank to OASIS: a line with one is refused when it is read (check()), and
      // skipped like any other line no keyword reads.
      lines_.push_back({no, l, std::move(t), l.find_first_of("\t\v\f\r")});
    }
    last_line_ = std::max(1, no);
    used_.assign(lines_.size(), 0);
  }

  CouplingSetup read();

 private:
  struct Line {
    int no;            // 1-based line number in the file
    std::string text;  // as written (for notes)
    Tokens w;          // its words (separated by spaces, as OASIS separates them)
    std::size_t control = std::string::npos;  // column of a TAB or other control character
  };

  [[noreturn]] void fail(int line, const std::string& what, const std::string& fix = {}) const {
    throw Error(what, "namcouple " + path_ + ":" + std::to_string(line), fix);
  }
  std::string at(int line) const { return path_ + ":" + std::to_string(line); }
  // A line OASIS reads (a keyword, a value, an entry's line) must not hold a TAB: OASIS would
  // take it for part of a word and misread the line.
  const Line& check(const Line& l) const {
    if (l.control != std::string::npos)
      fail(l.no, std::string(l.text[l.control] == '\t' ? "TAB" : "control") + " character at column " +
                     std::to_string(l.control + 1) + " (OASIS3-MCT separates words by blanks only and would misread this line)",
           "replace it with spaces");
    return l;
  }
  void note(int line, const std::string& what) { notes_.push_back(at(line) + ": " + what); }
  // Words after the `used` first ones of a line, which OASIS does not read either.
  void extra_words(const Line& l, std::size_t used, const std::string& what) {
    if (l.w.size() <= used) return;
    std::string rest;
    for (std::size_t k = used; k < l.w.size(); ++k) rest += (rest.empty() ? "" : " ") + l.w[k];
    note(l.no, "'" + rest + "' after " + what + " ignored (as OASIS3-MCT does)");
  }

  // The index of the first line whose first word is `key`, or -1.
  long find(const std::string& key) const {
    for (std::size_t i = 0; i < lines_.size(); ++i)
      if (lines_[i].w[0] == key) return static_cast<long>(i);
    return -1;
  }
  // The value line of keyword `key` (the next non-comment line), or nullptr if `key` is absent.
  const Line* value(const std::string& key, const std::string& expected) {
    const long i = find(key);
    if (i < 0) return nullptr;
    const auto j = static_cast<std::size_t>(i) + 1;
    if (j >= lines_.size() || lines_[j].w[0][0] == '$')
      fail(lines_[static_cast<std::size_t>(i)].no,
           key + " has no value: expected " + expected + " on the next line, found " +
               (j >= lines_.size() ? std::string("the end of the file") : lines_[j].w[0]));
    used_[j] = 1;
    return &check(lines_[j]);
  }

  // The next line of the $STRINGS entry that began at line `entry`; `expected` says what it is.
  const Line& take(int entry, const std::string& expected) {
    if (pos_ >= lines_.size())
      fail(entry, "end of file inside the $STRINGS entry of line " + std::to_string(entry) +
                      "; expected " + expected);
    const Line& l = check(lines_[pos_]);
    if (l.w[0][0] == '$')
      fail(l.no, "the $STRINGS entry of line " + std::to_string(entry) +
                     " is incomplete: expected " + expected + ", found " + l.w[0]);
    used_[pos_++] = 1;
    return l;
  }

  // `word` as a number or integer; a template placeholder is named as such.
  void not_a_number(int line, const std::string& word, const std::string& what) const {
    if (is_template_word(word))
      fail(line, "unfilled template placeholder " + quoted(word) + " where " + what + " is expected",
           "replace it with the value (the script that fills the template has not run)");
    if (is_name_word(word))
      fail(line, "expected " + what + ", found " + quoted(word) + " (an unfilled template placeholder?)",
           "replace it with the value (the script that fills the template has not run)");
  }
  double number(int line, const std::string& word, const std::string& what) const {
    const auto v = to_number(word);
    if (!v) {
      not_a_number(line, word, what);
      fail(line, "expected " + what + ", found " + quoted(word));
    }
    return *v;
  }
  // `width`: the characters of OASIS's Fortran format (I4, I8, I12, I2): a longer word would be
  // cut there (315360000 read as 31536000), so it is refused.
  long long integer(int line, const std::string& word, const std::string& what,
                    long long lo = kIntMin, long long hi = kIntMax, std::size_t width = 0) const {
    if (!detail::parse_integer(word)) not_a_number(line, word, what);
    if (width > 0 && word.size() > width)
      fail(line, what + " " + quoted(word) + " has more than the " + std::to_string(width) +
                     " characters OASIS3-MCT reads there (format I" + std::to_string(width) + ")",
           "OASIS3-MCT would read only its first " + std::to_string(width) + " characters");
    return detail::integer_in(word, lo, hi, what, [&](const std::string& m) { fail(line, m); });
  }
  // OASIS keeps restart, input and grid names in 32 characters and cuts longer ones.
  void name32(int line, const std::string& name, const std::string& what) const {
    if (name.size() > 32)
      fail(line, what + " " + quoted(name) + " is longer than the 32 characters OASIS3-MCT keeps",
           "shorten it (OASIS3-MCT would use its first 32 characters)");
  }

  void read_header(CouplingSetup& s);
  void read_start_date(CouplingSetup& s);
  void read_strings(CouplingSetup& s, long nfields, int nfields_line);
  CouplingConfig read_entry(const Line& l1, CouplingSetup& s);
  void read_line2(CouplingConfig& c, int entry, bool exchanged);
  void read_transform(CouplingConfig& c, const std::string& name, int entry);

  std::string path_;
  std::vector<Line> lines_;  // the lines that are not comments
  std::vector<char> used_;   // per line: read by a keyword
  int last_line_ = 1;
  std::size_t pos_ = 0;      // the next line of $STRINGS to read
  std::vector<std::string> notes_;
  std::vector<std::size_t> once_;  // couplings with period ONCE (the run length)
  Exchanges exchanges_;
};

CouplingSetup Namcouple::read() {
  CouplingSetup s;
  s.path = path_;
  // Every $WORD must be a keyword OASIS knows: OASIS3-MCT aborts on any other (a typo, or a
  // shell variable a script did not fill).
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    const Line& l = lines_[i];
    for (std::size_t k = 0; k < l.w.size(); ++k)
      if (is_template_word(l.w[k]) || (k > 0 && has_shell_variable(l.w[k])))
        fail(l.no, "unfilled template placeholder " + quoted(l.w[k]),
             "replace it with its value (the script that fills the template has not run)");
    const std::string& w = l.w[0];
    if (w[0] != '$') continue;
    check(l);
    if (!kKeywords.count(w)) {
      if (kKeywords.count(upper(w)))
        fail(l.no, "keyword " + w + " must be written " + upper(w) + " (OASIS3-MCT reads keywords in capitals only)");
      fail(l.no, "unknown keyword " + quoted(w) + " (OASIS3-MCT aborts on it too)",
           "known keywords: " + keywords_text() + "; a $ that a script should have replaced "
           "is an unfilled placeholder");
    }
    used_[i] = 1;
    extra_words(l, 1, w);
  }
  read_header(s);
  const long nf = find("$NFIELDS");
  const Line* nfv = value("$NFIELDS", "the number of $STRINGS entries");
  if (!nfv) fail(last_line_, "no $NFIELDS keyword", "add $NFIELDS with the number of $STRINGS entries (OASIS3-MCT requires it)");
  s.nfields = static_cast<int>(integer(nfv->no, nfv->w[0], "the number of $STRINGS entries", 0, detail::kMaxCouplings, 4));
  extra_words(*nfv, 1, "the number of fields");
  (void)nf;
  read_strings(s, s.nfields, nfv->no);

  for (std::size_t i : once_) s.couplings[i].period = s.runtime;
  for (const CouplingConfig& c : s.couplings)
    if (c.period > s.runtime)
      notes_.push_back(c.origin + ": period " + number_text(c.period) +
                       " s exceeds $RUNTIME: the field is never exchanged");
  // What no keyword read: skipped, as OASIS skips it, and said.
  for (std::size_t i = 0; i < lines_.size(); ++i)
    if (!used_[i])
      note(lines_[i].no, "'" + lines_[i].text.substr(lines_[i].text.find_first_not_of(" \t")) +
                             "' is read by no keyword; skipped (as OASIS3-MCT skips it)");
  s.notes = std::move(notes_);
  apply_timeout_override(s);
  return s;
}

// $INIDATE (YYYYMMDD) and $CALTYPE (OASIS3's: 0 a 365-day calendar, 1 the Gregorian, n > 1
// n-day months). OASIS3-MCT skips both, so a value estuary cannot use is a note, not an error:
// a namcouple OASIS runs must run here too.
void Namcouple::read_start_date(CouplingSetup& s) {
  const auto first_value = [&](const std::string& key) -> const Line* {
    const long i = find(key);
    if (i < 0) return nullptr;
    std::size_t j = static_cast<std::size_t>(i) + 1;
    for (std::size_t k = j; k < lines_.size() && lines_[k].w[0][0] != '$'; ++k) used_[k] = 1;
    note(lines_[static_cast<std::size_t>(i)].no, key + " is obsolete in OASIS3-MCT; estuary reads it for the time axis of its files");
    return j < lines_.size() && lines_[j].w[0][0] != '$' ? &lines_[j] : nullptr;
  };
  if (const Line* v = first_value("$CALTYPE")) {
    const std::string& w = v->w[0];
    if (w == "0") s.calendar = "noleap";
    else if (w == "1") s.calendar = "standard";
    else if (w == "30") s.calendar = "360_day";
    else note(v->no, "$CALTYPE " + quoted(w) + " has no CF calendar (0, 1 and 30 have); the standard calendar is used");
  }
  if (const Line* v = first_value("$INIDATE")) {
    const std::string& w = v->w[0];
    bool ok = w.size() == 8 && std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); });
    if (ok) {
      try {
        s.start_date = detail::parse_cf_date(w.substr(0, 4) + "-" + w.substr(4, 2) + "-" + w.substr(6, 2), s.calendar,
                                             "$INIDATE").text();
      } catch (const Error&) {
        ok = false;
      }
    }
    if (!ok) note(v->no, "$INIDATE " + quoted(w) + " is not a date YYYYMMDD of the " + s.calendar + " calendar; not used");
  }
}

void Namcouple::read_header(CouplingSetup& s) {
  // Keywords given twice: OASIS reads the first.
  std::map<std::string, int> first;
  for (const Line& l : lines_)
    if (l.w[0][0] == '$' && l.w[0] != "$END") {
      const auto [it, fresh] = first.emplace(l.w[0], l.no);
      if (!fresh && l.w[0] != "$STRINGS")
        note(l.no, l.w[0] + " given again (first at line " + std::to_string(it->second) +
                       "); OASIS3-MCT and estuary read the first");
    }
  // Obsolete and unused keywords: their lines (up to the next keyword) are theirs, not strays.
  for (const auto& [key, why] : kKeywords) {
    if (!why) continue;
    const long i = find(key);
    if (i < 0) continue;
    for (auto j = static_cast<std::size_t>(i) + 1; j < lines_.size() && lines_[j].w[0][0] != '$'; ++j)
      used_[j] = 1;
    note(lines_[static_cast<std::size_t>(i)].no, key + " is " + why + "; not used");
  }

  read_start_date(s);

  const Line* v = value("$RUNTIME", "the run length in seconds");
  if (!v) fail(last_line_, "no $RUNTIME keyword", "add $RUNTIME with the run length in seconds");
  s.runtime = static_cast<double>(integer(v->no, v->w[0], "the run length in seconds", 1, kIntMax, 12));
  extra_words(*v, 1, "the run length");

  s.log_level = 2;  // OASIS's default
  if ((v = value("$NLOGPRT", "one to three log levels"))) {
    s.log_level = static_cast<int>(integer(v->no, v->w[0], "the log level", kIntMin, kIntMax, 12));
    if (v->w.size() > 1) {
      const int timer = static_cast<int>(integer(v->no, v->w[1], "the timer log level", kIntMin, kIntMax, 12));
      s.timer_level = std::max(0, timer);
      // OASIS3-MCT (mod_oasis_method): a negative timer level turns on LUCIA, its load
      // balancing analysis (LUCIA_debug = -min(level, 0)); here, the coupling timeline.
      s.timeline = timer < 0;
    }
    if (v->w.size() > 2) integer(v->no, v->w[2], "the third log level", kIntMin, kIntMax, 12);
    extra_words(*v, 3, "the log levels");
  }
  if ((v = value("$NNOREST", "T or F"))) {
    // OASIS: true if the value starts with t, T, .t or .T; anything else is false.
    const std::string& w = v->w[0];
    s.no_restart = w[0] == 't' || w[0] == 'T' || (w.size() > 1 && w[0] == '.' && (w[1] == 't' || w[1] == 'T'));
    const std::string u = upper(w);
    if (u != "T" && u != "F" && u != "TRUE" && u != "FALSE" && u != ".TRUE." && u != ".FALSE.")
      note(v->no, "$NNOREST " + quoted(w) + " read as " + (s.no_restart ? "T" : "F") + " (as OASIS3-MCT reads it)");
    extra_words(*v, 1, "$NNOREST's value");
  }
  if ((v = value("$NMAPDEC", "decomp_1d or decomp_wghtfile"))) {
    if (v->w[0] != "decomp_1d" && v->w[0] != "decomp_wghtfile")
      fail(v->no, "$NMAPDEC: unknown value " + quoted(v->w[0]), "use decomp_1d or decomp_wghtfile (as OASIS3-MCT)");
    s.map_decomposition = v->w[0];
    extra_words(*v, 1, "$NMAPDEC's value");
  }
  if ((v = value("$NWGTOPT", "a weight option (e.g. abort_on_bad_index)"))) {
    static const std::set<std::string> opts{
        "abort_on_bad_index", "ignore_bad_index", "ignore_bad_index_silently", "use_bad_index",
        "abort_on_bad_weights", "ignore_bad_weights", "ignore_bad_weights_silently", "use_bad_weights"};
    if (!opts.count(v->w[0]))
      fail(v->no, "$NWGTOPT: unknown value " + quoted(v->w[0]),
           "use abort_on_bad_index, ignore_bad_index, ignore_bad_index_silently or use_bad_index");
    s.weight_option = v->w[0];
    extra_words(*v, 1, "$NWGTOPT's value");
  }
  if ((v = value("$NMATXRD", "orig or ceg")) && v->w[0] != "orig" && v->w[0] != "ceg")
    fail(v->no, "$NMATXRD: unknown value " + quoted(v->w[0]), "use orig or ceg (as OASIS3-MCT)");
  if ((v = value("$NCDFTYP", "cdf1, cdf2 or cdf5"))) {
    const std::string l = lower(v->w[0]);
    if (l != "cdf1" && l != "cdf2" && l != "cdf5")
      fail(v->no, "$NCDFTYP: unknown value " + quoted(v->w[0]), "use cdf1, cdf2 or cdf5");
  }
  for (const char* key : {"$NTHRESH", "$STHRESH"})
    if ((v = value(key, "a latitude threshold"))) number(v->no, v->w[0], std::string(key) + "'s latitude threshold");
  if ((v = value("$NUNITNO", "two unit numbers"))) {
    integer(v->no, v->w[0], "the first Fortran unit number", kIntMin, kIntMax, 12);
    if (v->w.size() > 1) integer(v->no, v->w[1], "the last Fortran unit number", kIntMin, kIntMax, 12);
  }
}

void Namcouple::read_strings(CouplingSetup& s, long nfields, int nfields_line) {
  const long open = find("$STRINGS");
  if (open < 0)
    fail(last_line_, "no $STRINGS keyword", "add $STRINGS with one entry per coupling");
  pos_ = static_cast<std::size_t>(open) + 1;
  // Up to $NFIELDS entries, ended early by $END or by the end of the file (OASIS's loop).
  while (static_cast<long>(s.couplings.size()) < nfields && pos_ < lines_.size()) {
    const Line& l = check(lines_[pos_]);
    if (l.w[0] == "$END") break;
    if (l.w[0][0] == '$')
      fail(l.no, "expected a $STRINGS entry, found " + l.w[0],
           "OASIS3-MCT reads only entries after $STRINGS: move " + l.w[0] + " before $STRINGS");
    used_[pos_++] = 1;
    CouplingConfig c = read_entry(l, s);
    exchanges_.add(c, [&](const std::string& what, const std::string& fix) { fail(l.no, what, fix); });
    s.couplings.push_back(std::move(c));
  }
  // OASIS then requires nothing but $END up to the end of the file.
  for (; pos_ < lines_.size(); ++pos_) {
    const Line& l = check(lines_[pos_]);
    if (l.w[0] == "$END") continue;
    if (l.w[0][0] == '$')
      fail(l.no, l.w[0] + " after $STRINGS: OASIS3-MCT reads nothing after the $STRINGS entries but $END",
           "move " + l.w[0] + " before $STRINGS");
    fail(l.no, "more $STRINGS entries than $NFIELDS (" + std::to_string(nfields) + ", line " +
                   std::to_string(nfields_line) + ") allows",
         "raise $NFIELDS (OASIS3-MCT stops here too: \"NFIELDS too small\")");
  }
  // OASIS reads on for the missing entries: a comment or blank line after the last one (and no
  // $END) is read as an entry, and OASIS aborts on it.
  const bool closed = std::any_of(lines_.begin() + open + 1, lines_.end(), [](const Line& l) { return l.w[0] == "$END"; });
  if (static_cast<long>(s.couplings.size()) < nfields && !closed && last_line_ > lines_.back().no)
    fail(lines_.back().no + 1, "$NFIELDS is " + std::to_string(nfields) + " but only " + std::to_string(s.couplings.size()) +
                                   " entries follow, with no $END: OASIS3-MCT reads the comment or blank line here as "
                                   "an entry and aborts",
         "close $STRINGS with $END, or set $NFIELDS to the number of entries");
  if (static_cast<long>(s.couplings.size()) < nfields)
    note(nfields_line, "$NFIELDS is " + std::to_string(nfields) + " but $STRINGS has " +
                           std::to_string(s.couplings.size()) + " entries (OASIS reads it as a maximum)");
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

CouplingConfig Namcouple::read_entry(const Line& L1, CouplingSetup& s) {
  const Tokens& t1 = L1.w;
  const int l1 = L1.no;
  const std::string form = "'SRC DST 1 period ntrans restart.nc STATUS'";
  CouplingConfig c;
  c.origin = at(l1);
  // OASIS reads word 6 as OUTPUT first: "SRC DST 1 period ntrans OUTPUT" names no file.
  const bool short_output = t1.size() >= 6 && t1[5] == "OUTPUT";
  if (t1.size() < 7 && !short_output)
    fail(l1, "expected " + form + ", found " + std::to_string(t1.size()) + " words");
  extra_words(L1, short_output ? 6 : 7, "the status");

  c.src_fields = split_fields(t1[0]);
  c.dst_fields = split_fields(t1[1]);
  for (const auto* list : {&c.src_fields, &c.dst_fields})
    for (const std::string& f : *list)
      if (f.empty())
        fail(l1, "empty field name in the colon list " + quoted(list == &c.src_fields ? t1[0] : t1[1]));
  integer(l1, t1[2], "the field label (obsolete, usually 1)", kIntMin, kIntMax, 4);
  if (t1[3].rfind("ONCE", 0) == 0) {
    once_.push_back(s.couplings.size());
    c.period = 1;  // set to $RUNTIME once it is known
  } else {
    c.period = static_cast<double>(integer(l1, t1[3], "the coupling period in seconds", kIntMin, kIntMax, 8));
    if (c.period == 0)
      fail(l1, "the coupling period must not be 0 (OASIS3-MCT aborts too)",
           "to never exchange the field, give a period longer than $RUNTIME");
    if (c.period < 0)
      note(l1, "negative period " + t1[3] + ": read as OASIS reads it; a component that defines one of "
               "the entry's fields is refused at enddef");
  }
  const long long ntrans = integer(l1, t1[4], "the number of transformations", 0, 99, 4);

  // OASIS matches the status by its first letters (EXPORTED, EXPOUT, ...), in capitals.
  const std::string word = short_output ? "OUTPUT" : t1[6];
  if (word == "AUXILARY")
    fail(l1, "field status AUXILARY is not supported (OASIS3-MCT aborts on it too)", "use EXPORTED");
  std::string status;
  for (const char* known : {"EXPORTED", "OUTPUT", "IGNORED", "EXPOUT", "IGNOUT", "INPUT"})
    if (status.empty() && word.rfind(known, 0) == 0) status = known;
  bool renamed = false;
  const auto st = status_named(status, renamed);
  if (!st) {
    if (status_named(upper(word), renamed))
      fail(l1, "field status " + quoted(word) + " must be written " + upper(word) + " (OASIS3-MCT reads it in capitals only)");
    fail(l1, "unknown field status " + quoted(word), std::string("use ") + kStatusesText);
  }
  if (word != status) note(l1, "status " + quoted(word) + " read as " + status + " (OASIS3-MCT reads its first letters)");
  c.status = *st;
  if (renamed) note(l1, status + " read as " + name_of(c.status) + " (as OASIS3-MCT does)");
  const std::string file = short_output ? "" : t1[5];
  name32(l1, file, c.status == FieldStatus::input ? "the input file name" : "the restart file name");

  auto fail_entry = [&](const std::string& what, const std::string& fix) { fail(l1, what, fix); };
  if (c.status == FieldStatus::input) {
    // OASIS reads nothing after line 1 of an INPUT entry, whatever its transformation count.
    c.input_file = file;
    if (ntrans != 0) note(l1, "an INPUT entry has no transformation lines: the count " + t1[4] + " is ignored (as OASIS3-MCT does)");
    check_coupling(c, fail_entry, true);
    return c;
  }
  c.restart_file = file;
  // Line 3 (the grids' periodicity) is read for EXPORTED and EXPOUT only.
  const bool exchanged = (c.status == FieldStatus::exported || c.status == FieldStatus::expout) && !renamed;
  read_line2(c, l1, exchanged);
  auto pr = [](const std::string& w) { return w == "P" || w == "R"; };
  const bool old_line3 = renamed && pos_ < lines_.size() && lines_[pos_].w.size() == 4 && pr(lines_[pos_].w[0]) &&
                         pr(lines_[pos_].w[2]);
  if (exchanged || old_line3) {
    const Line& l3 = take(l1, "line 3 'P|R overlap P|R overlap'");
    if (old_line3) note(l3.no, "line 3 of an " + status + " entry, which OASIS3-MCT does not read; skipped");
    if (l3.w.size() < 4 || !pr(l3.w[0]) || !pr(l3.w[2]))
      fail(l3.no, "expected line 3 'P|R overlap P|R overlap': each grid's periodicity must be P or R (periodic or regional)");
    GridRef* g[2] = {&c.src_grid, &c.dst_grid};
    for (int k = 0; k < 2; ++k) {
      g[k]->periodicity = l3.w[2 * k] == "P" ? Periodicity::periodic : Periodicity::regional;
      g[k]->overlap = static_cast<int>(integer(l3.no, l3.w[2 * k + 1], "the number of overlapping columns", 0, 99, 2));
    }
    extra_words(l3, 4, "line 3");
  }
  if (ntrans > 0) {
    const Line& ln = take(l1, std::to_string(ntrans) + " transformation name(s)");
    if (!exchanged) {
      // OASIS checks only the first name and then reads ntrans LOCTRANS lines (the last wins).
      if (ln.w[0].rfind("LOCTRANS", 0) != 0)
        fail(ln.no, "an " + status + " field takes only LOCTRANS, not " + ln.w[0] + " (as in OASIS3-MCT)",
             "remove " + ln.w[0]);
      extra_words(ln, 1, "LOCTRANS (OASIS reads only the first name for an " + status + " field)");
      c.transforms.push_back("LOCTRANS");
      for (long long k = 0; k < ntrans; ++k) read_transform(c, "LOCTRANS", l1);
      check_coupling(c, fail_entry, true);
      return c;
    }
    const std::string count = "line " + std::to_string(l1) + " says " + t1[4] + " transformations";
    if (static_cast<long long>(ln.w.size()) < ntrans)
      fail(ln.no, "expected " + std::to_string(ntrans) + " transformation name(s) (" + count + "), found " +
                      std::to_string(ln.w.size()));
    if (static_cast<long long>(ln.w.size()) > ntrans && ln.w[static_cast<std::size_t>(ntrans)][0] != '#')
      fail(ln.no, "expected " + std::to_string(ntrans) + " transformation name(s) (" + count + "), found " +
                      std::to_string(ln.w.size()),
           "correct the count on line " + std::to_string(l1) + " (a name more than it says would be skipped)");
    for (long long k = 0; k < ntrans; ++k) {
      const std::string& n = ln.w[static_cast<std::size_t>(k)];
      if (is_obsolete_transform(n))
        fail(ln.no, "transformation " + n + " is obsolete (OASIS3 only; OASIS3-MCT aborts on it too)",
             "OASIS3-MCT and estuary support LOCTRANS, MAPPING, SCRIPR, CONSERV, BLASOLD, "
             "BLASNEW, CHECKIN and CHECKOUT (and estuary STACK)");
      if (n == "YAC")
        fail(ln.no, "transformation YAC (OASIS3-MCT built with YAC) is not supported yet by estuary",
             "use SCRIPR or MAPPING");
      if (!is_transform(n))
        fail(ln.no, "unknown transformation " + quoted(n),
             "use LOCTRANS, MAPPING, SCRIPR, CONSERV, BLASOLD, BLASNEW, CHECKIN, CHECKOUT or STACK (in capitals)");
      if (std::find(c.transforms.begin(), c.transforms.end(), n) != c.transforms.end())
        note(ln.no, "transformation " + n + " listed twice: both configuration lines are read, the last one counts (as in OASIS3-MCT)");
      c.transforms.push_back(n);
    }
    for (const std::string& n : c.transforms) read_transform(c, n, l1);
  }
  check_coupling(c, fail_entry, true);
  return c;
}

void Namcouple::read_line2(CouplingConfig& c, int entry, bool exchanged) {
  const std::string form = "line 2 'nx_src ny_src nx_dst ny_dst srcgrid dstgrid [LAG=t] [SEQ=n]'";
  const Line& l = take(entry, form);
  const Tokens& t = l.w;
  auto is_option = [](const std::string& w) { return w.rfind("LAG=", 0) == 0 || w.rfind("SEQ=", 0) == 0; };
  // As OASIS: two words, or a third word LAG=/SEQ=, are the grid names without sizes.
  std::size_t opt = 2;
  if (t.size() < 2) fail(l.no, "expected " + form);
  if (t.size() >= 3 && !is_option(t[2])) {
    if (t.size() < 6) fail(l.no, "expected " + form + ", found " + std::to_string(t.size()) + " words");
    std::int64_t* sizes[4] = {&c.src_grid.nx, &c.src_grid.ny, &c.dst_grid.nx, &c.dst_grid.ny};
    // A grid has at least one point; 0 is no "unknown" here (leave the sizes out instead).
    for (int k = 0; k < 4; ++k) *sizes[k] = integer(l.no, t[static_cast<std::size_t>(k)], "a grid size", 1, kSizeMax, 8);
    for (const GridRef* g : {&c.src_grid, &c.dst_grid})
      if (!detail::mul_size(g->nx, g->ny))
        fail(l.no, "grid size " + std::to_string(g->nx) + " x " + std::to_string(g->ny) + " overflows a 64-bit integer");
    c.src_grid.name = t[4];
    c.dst_grid.name = t[5];
    opt = 6;
    if (exchanged) name32(l.no, t[4], "the source grid name");
    if (exchanged) name32(l.no, t[5], "the target grid name");
  } else {
    c.src_grid.name = t[0];
    c.dst_grid.name = t[1];
    if (exchanged) name32(l.no, t[0], "the source grid name");
    if (exchanged) name32(l.no, t[1], "the target grid name");
  }
  // OASIS reads up to four words after the names; LAG= and SEQ= among them count (the last one
  // given wins), the others are ignored.
  c.seq = 1;  // OASIS's default
  for (std::size_t k = opt; k < t.size() && k < opt + 4; ++k) {
    const std::string v = t[k].size() >= 4 ? t[k].substr(4) : std::string();
    if (t[k].size() > 12 && (t[k].rfind("LAG=", 0) == 0 || t[k].rfind("SEQ=", 0) == 0))
      fail(l.no, quoted(t[k]) + " is longer than the 12 characters OASIS3-MCT reads (format A3,A1,I8)");
    if (t[k].rfind("LAG=", 0) == 0) c.lag = static_cast<double>(integer(l.no, v, "LAG=seconds", kIntMin, kIntMax, 8));
    else if (t[k].rfind("SEQ=", 0) == 0) c.seq = static_cast<int>(integer(l.no, v, "SEQ=n", 0, kIntMax, 8));
    else note(l.no, quoted(t[k]) + " is neither LAG= nor SEQ=; ignored (as OASIS3-MCT does)");
  }
  extra_words(l, opt + 4, "the grid names and four options");
}

void Namcouple::read_transform(CouplingConfig& c, const std::string& name, int entry) {
  if (name == "LOCTRANS") {
    const Line& l = take(entry, "the LOCTRANS operation (INSTANT, ACCUMUL, AVERAGE, T_MIN, T_MAX)");
    // OASIS compares the first 7 (INSTANT, AVERAGE, ACCUMUL) or 5 (T_MIN, T_MAX) characters.
    std::optional<LocTrans> op;
    for (LocTrans t : kLocTrans)
      if (l.w[0].rfind(name_of(t), 0) == 0) op = t;
    if (!op)
      fail(l.no, "expected a LOCTRANS operation (INSTANT, ACCUMUL, AVERAGE, T_MIN or T_MAX), found " + quoted(l.w[0]));
    if (l.w[0] != name_of(*op)) note(l.no, quoted(l.w[0]) + " read as " + name_of(*op) + " (OASIS3-MCT reads its first letters)");
    c.loctrans = *op;
    extra_words(l, 1, "the LOCTRANS operation");
  } else if (name == "STACK") {
    // estuary's extension: the stages of an interpolation stack, separated by '|', each a name
    // and key=value parameters, e.g. "conservative normalization=fracarea | nnn n=4 | fixed value=-999".
    const Line& l = take(entry, "the STACK line 'stage [key=value ...] | stage ...'");
    std::string text;
    for (const std::string& w : l.w) text.append(text.empty() ? "" : " ").append(w);
    try {
      c.interpolation = split_stack(text, "");
    } catch (const Error& e) {
      fail(l.no, "STACK: " + e.fault(), e.fix());
    }
    try {
      std::vector<StackStage> stages;
      for (const StageSpec& st : c.interpolation) stages.push_back(make_stage(st.name, st.params, ""));
      check_stack(stages, "");
    } catch (const Error& e) {
      fail(l.no, "STACK: " + e.fault(), e.fix());
    }
  } else if (name == "MAPPING") {
    const Line& l = take(entry, "the MAPPING line 'file.nc [src|dst] [bfb|sum|opt]'");
    MappingSpec m;
    m.file = l.w[0];
    // OASIS reads words 2 and 3, each a location or an order (the last one of a kind wins).
    for (std::size_t k = 1; k < l.w.size() && k < 3; ++k) {
      const std::string& w = l.w[k];
      if (w == "src" || w == "dst") m.location = *location_named(w);
      else if (w == "bfb" || w == "sum" || w == "opt") m.order = *order_named(w);
      else fail(l.no, "unexpected " + quoted(w) + " in the MAPPING line", "expected 'file.nc [src|dst] [bfb|sum|opt]'");
    }
    extra_words(l, 3, "the MAPPING options");
    c.mapping = m;
  } else if (name == "SCRIPR") {
    const Line& l = take(entry, "the SCRIPR line, e.g. 'DISTWGT LR SCALAR LATLON 1 4'");
    const Tokens& t = l.w;
    auto word = [&](std::size_t k) { return k < t.size() ? t[k] : std::string(); };
    auto fail_here = [&](const std::string& what, const std::string& fix) { fail(l.no, what, fix); };
    ScriprSpec s;
    s.method = t[0];
    const std::string base = t[0].size() > 2 && t[0].substr(t[0].size() - 2) == "NF" ? t[0].substr(0, t[0].size() - 2) : t[0];
    const bool locc = t[0] == "LOCCUNIF" || t[0] == "LOCCDIST" || t[0] == "LOCCGAUS";
    if (t[0] == "SPMAP") fail(l.no, "SPMAP is YAC's source point mapping, not a namcouple method", "use LOCCUNIF, LOCCDIST or LOCCGAUS (OASIS3-MCT 5), or SPMAP in a YAML configuration");
    if (!locc && base != "BILINEAR" && base != "BICUBIC" && base != "DISTWGT" && base != "GAUSWGT" && t[0] != "CONSERV")
      check_scripr(s, fail_here);  // names the unknown method
    // OASIS reads a missing word as blank (0 for the bin count); the words each method needs
    // after the fifth are required.
    s.grid_type = word(1);
    s.field_type = word(2);
    s.restriction = word(3);
    s.bins = word(4).empty() ? 0 : static_cast<int>(integer(l.no, word(4), "the number of SCRIPR search bins", 0, kIntMax, 4));
    std::size_t used = 5;
    if (t[0] == "CONSERV") {
      if (t.size() < 7)
        fail(l.no, "expected the SCRIPR line 'CONSERV LR SCALAR LATLON bins FRACAREA|DESTAREA|FRACNNEI FIRST|SECOND' "
                   "(the normalisation and the order are required, as in OASIS3-MCT), found " + std::to_string(t.size()) + " words");
      s.normalization = t[5];
      s.order = t[6];
      used = 7;
      if (t.size() > 7 && t[7][0] != '#') {  // OASIS 5: north and south latitude thresholds
        if (t.size() < 9) fail(l.no, "SCRIPR CONSERV: the north and south thresholds must both be given (OASIS3-MCT 5)");
        number(l.no, t[7], "the north threshold");
        number(l.no, t[8], "the south threshold");
        fail(l.no, "SCRIPR CONSERV north/south thresholds are not supported yet by estuary", "remove them");
      }
    }
    if (base == "DISTWGT" || base == "GAUSWGT" || locc) {
      if (t.size() < 6)
        fail(l.no, "expected the SCRIPR line '" + t[0] + " LR SCALAR LATLON bins neighbours" +
                       (base == "GAUSWGT" || t[0] == "LOCCGAUS" ? " variance" : "") + "': the number of neighbours is required");
      s.neighbors = static_cast<int>(integer(l.no, t[5], "the number of neighbours", 1, kIntMax, 4));
      used = 6;
    }
    if (base == "GAUSWGT" || t[0] == "LOCCGAUS") {
      if (t.size() < 7)
        fail(l.no, "expected the SCRIPR line '" + t[0] + " LR SCALAR LATLON bins neighbours variance': the variance is required");
      s.variance = number(l.no, t[6], "the " + t[0] + " variance");
      used = 7;
    }
    extra_words(l, used, "the SCRIPR " + t[0] + " parameters");
    if (s.field_type == "VECTOR") note(l.no, "SCRIPR field type VECTOR read as SCALAR (as OASIS3-MCT does)");
    if (s.bins == 0) note(l.no, "SCRIPR without a search bin count (OASIS reads 0); estuary's search uses none");
    check_scripr(s, fail_here);
    c.scripr = s;
  } else if (name == "CONSERV") {
    const Line& l = take(entry, "the CONSERV line 'GLOBAL|GLBPOS|BASBAL|BASPOS [method]'");
    if (l.w.size() >= 2 && (!sum_method_named(l.w[1]) || l.w[1] != lower(l.w[1])))
      fail(l.no, "unknown CONSERV sum method " + quoted(l.w[1]), std::string("use ") + kSumMethodsText);
    if (l.w[0] == "GSSPOS" || l.w[0] == "BSSPOS")
      fail(l.no, "CONSERV " + l.w[0] + " is not supported yet by estuary", "use GLOBAL, GLBPOS, BASBAL or BASPOS");
    const auto mode = conserv_mode_named(l.w[0]);
    if (!mode || l.w[0] != upper(l.w[0]))
      fail(l.no, "unknown CONSERV mode " + quoted(l.w[0]), "use GLOBAL, GLBPOS, BASBAL or BASPOS");
    ConservSpec cs;
    cs.mode = *mode;
    if (l.w.size() >= 2) {
      const auto m = sum_method_named(l.w[1]);
      if (!m || l.w[1] != lower(l.w[1]))
        fail(l.no, "unknown CONSERV sum method " + quoted(l.w[1]), std::string("use ") + kSumMethodsText);
      cs.method = *m;
    }
    extra_words(l, 2, "the CONSERV options");
    c.conserv = cs;
  } else if (name == "BLASOLD" || name == "BLASNEW") {
    const Line& l = take(entry, "the " + name + " line 'scale nterms'");
    BlasSpec b;
    b.scale = number(l.no, l.w[0], "the " + name + " scale factor");
    // OASIS reads a missing count as 0.
    const long long n = l.w.size() > 1 ? integer(l.no, l.w[1], "the number of " + name + " terms", 0, 1000, 4) : 0;
    extra_words(l, 2, "the " + name + " scale and count");
    for (long long k = 0; k < n; ++k) {
      const Line& term = take(entry, "the " + name + " term 'CONSTANT value'");
      // OASIS 5's BLASNEW: the first term 'CONSTANT add', the others field combinations
      // 'FIELD mult add' (not supported by estuary yet). BLASOLD: CONSTANT terms, the last wins.
      if (name == "BLASNEW" && k > 0) {
        if (term.w.size() < 3)
          fail(term.no, "expected the BLASNEW term 'FIELD mult add' (OASIS3-MCT 5: the terms after the first "
                        "combine fields)");
        fail(term.no, "BLASNEW combination with field " + quoted(term.w[0]) + " is not supported yet by estuary",
             "combine the fields in the model before the put");
      }
      if (term.w[0] != "CONSTANT")
        fail(term.no, name + " term " + quoted(term.w[0]) + " is not supported: only a CONSTANT term is (as in OASIS3-MCT)",
             "write 'CONSTANT value'");
      if (term.w.size() < 2) fail(term.no, "expected the " + name + " term 'CONSTANT value'");
      b.add = number(term.no, term.w[1], "the " + name + " constant");  // OASIS: the last one
      extra_words(term, 2, "the " + name + " term");
    }
    if (n > 1) note(l.no, name + " has " + std::to_string(n) + " CONSTANT terms: the last one is used (as in OASIS3-MCT)");
    (name == "BLASOLD" ? c.blasold : c.blasnew) = b;
  } else {  // CHECKIN, CHECKOUT: OASIS reads and ignores their line (e.g. "INT=1")
    take(entry, "the " + name + " line (e.g. INT=1)");
    (name == "CHECKIN" ? c.checkin : c.checkout) = true;
  }
}

}  // namespace

CouplingSetup read_namcouple(const std::string& path) { return Namcouple(path).read(); }

}  // namespace estuary
