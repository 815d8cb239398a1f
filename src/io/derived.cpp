// Derived fields: expressions of the model's fields, evaluated on the model ranks (derived.hpp).
//
// Why muParser (MIT, Debian libmuparser-dev) rather than a parser of our own or ExprTk: it is a
// small, maintained library that parses an expression once into bytecode and then evaluates it
// with variables bound to addresses, which is what a per-step evaluation over a rank's points
// needs; it reports syntax errors with their position; its functions (sqrt, exp, log, abs, min,
// max, ...), operators (+ - * / ^, comparisons, && ||, ?:) and constants (_pi, _e) are what
// configuration expressions use. ExprTk (header-only) costs tens of seconds of compile time in
// every file that includes it. We evaluate point by point (Eval()), not with muParser's bulk
// Eval(results, n): Debian builds the bulk path with OpenMP, which starts a team of threads on
// every model rank and changes the caller's OpenMP thread count (omp_set_num_threads); measured
// on this machine the point-by-point path is as fast as the bulk one on one thread
// (docs/performance.md, "Derived fields").
#include "io/derived.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#ifdef ESTUARY_HAVE_MUPARSER
#include <muParser.h>
#endif

#include "io/output_impl.hpp"

namespace estuary::io {

namespace {

#ifdef ESTUARY_HAVE_MUPARSER
// muParser's name characters and '@', which starts a temporal-operation term (XIOS's syntax).
constexpr const char* kNameChars = "0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@";
#endif

std::string in_quotes(const std::string& s) {
  std::string q(1, '\'');
  q.append(s).append(1, '\'');
  return q;
}

// Where the expression of entry k of file `f` is, for a configuration built in code.
std::string expr_origin(const OutputConfig& c, const FileConfig& f, std::size_t k) {
  if (!f.fields[k].origin.empty()) return f.fields[k].origin;
  std::string w = "config ";
  w.append(c.source).append(", file ").append(f.name).append(", key fields[").append(std::to_string(k)).append("].expr");
  return w;
}

}  // namespace

std::vector<std::string> expression_variables(const std::string& expr, const std::string& where) {
  if (expr.find_first_not_of(" \t") == std::string::npos)
    throw Error("empty expression", where, "write an expression of the model's fields, e.g. \"tas - 273.15\"");
#ifdef ESTUARY_HAVE_MUPARSER
  try {
    mu::Parser p;
    p.DefineNameChars(kNameChars);
    // Every name that is not a function or constant is taken as a variable here; which of them
    // are fields is known only at end_def, when the model has declared its fields.
    static double scratch = 0;
    p.SetVarFactory([](const mu::char_type*, void*) -> mu::value_type* { return &scratch; }, nullptr);
    p.SetExpr(expr);
    std::vector<std::string> vars;
    for (const auto& kv : p.GetUsedVar()) {
      const std::string& v = kv.first;
      // '@' is a name character so that "@sst" is one variable; elsewhere it is a mistake.
      const std::size_t at = v.find('@', 1);
      const bool bad_start = v[0] == '@' && (v.size() == 1 || std::isdigit(static_cast<unsigned char>(v[1])));
      if (at != std::string::npos || bad_start)
        throw Error("'" + v + "' in expression " + in_quotes(expr) + " is not a name nor a `@` term", where,
                    "write @name for the temporal operation of field `name` (XIOS), and names without @ otherwise");
      vars.push_back(v);
    }
    return vars;
  } catch (const mu::Parser::exception_type& e) {
    std::string msg = e.GetMsg();
    while (!msg.empty() && (msg.back() == '.' || msg.back() == ' ')) msg.pop_back();
    if (msg.find("position") == std::string::npos) msg.append(" at position ").append(std::to_string(e.GetPos()));
    std::string what = "syntax error in expression ";
    what.append(in_quotes(expr)).append(": ").append(msg).append(" (positions count from 0)");
    throw Error(what, where,
                "use the fields' names, numbers, + - * / ^, comparisons, ?: and muParser's functions "
                "(sqrt, exp, log, abs, min, max, ...)");
  }
#else
  std::string what = "derived field expression ";
  what.append(in_quotes(expr)).append(": this estuary was built without muParser, which evaluates expressions");
  throw Error(what, where, "install libmuparser-dev (scripts/setup) and rebuild estuary, or remove the expr");
#endif
}

namespace {

// One derived field's definition from its configuration entry (errors at `where`).
DerivedDef derived_def(const FieldConfig& fd, const std::string& where) {
  DerivedDef d;
  d.name = fd.name;
  d.expr = fd.expr;
  d.origin = where;
  d.units = fd.units;
  d.long_name = fd.long_name;
  d.standard_name = fd.standard_name;
  d.freq_op = fd.freq_op;
  std::vector<std::string> plain;
  for (const std::string& v : expression_variables(fd.expr, where)) {
    if (v[0] != '@') {
      plain.push_back(v);
      continue;
    }
    DerivedDef::Term t;
    t.var = v;
    auto it = fd.at.find(v.substr(1));
    t.field = it == fd.at.end() || it->second.field.empty() ? v.substr(1) : it->second.field;
    if (it != fd.at.end()) t.operation = it->second.operation;
    if (t.operation == Operation::once)
      throw Error("operation once for term " + in_quotes(v) + " of expression " + in_quotes(fd.expr), where,
                  "use instant, average, minimum, maximum or accumulate");
    d.terms.push_back(std::move(t));
    d.vars.push_back(d.terms.back().field);
  }
  if (!d.terms.empty() && !plain.empty())
    throw Error("expression " + in_quotes(fd.expr) + " mixes `@` terms (" + d.terms.front().var + ") with field " +
                    in_quotes(plain.front()) + " at each step",
                where, "write @" + plain.front() + " for its value over each freq_op period too");
  for (const auto& [name, term] : fd.at)
    if (std::none_of(d.terms.begin(), d.terms.end(), [&](const DerivedDef::Term& t) { return t.var == "@" + name; }))
      throw Error("`at` names " + in_quotes(name) + ", which is no `@` term of expression " + in_quotes(fd.expr),
                  where, "give the operation of each @name the expression uses");
  if (d.terms.empty()) d.vars = std::move(plain);
  std::sort(d.vars.begin(), d.vars.end());
  d.vars.erase(std::unique(d.vars.begin(), d.vars.end()), d.vars.end());
  return d;
}

}  // namespace

void check_expression(const FieldConfig& fd, const std::string& where) { derived_def(fd, where); }

std::vector<DerivedDef> derived_fields(const OutputConfig& c) {
  std::vector<DerivedDef> defs;  // in the order the configuration gives them
  std::map<std::string, std::size_t> by_name;
  auto same = [](const DerivedDef& a, const DerivedDef& b) {
    if (a.expr != b.expr || a.freq_op != b.freq_op || a.terms.size() != b.terms.size()) return false;
    for (std::size_t k = 0; k < a.terms.size(); ++k)
      if (a.terms[k].field != b.terms[k].field || a.terms[k].operation != b.terms[k].operation) return false;
    return true;
  };
  auto take = [&](const FieldConfig& fd, const std::string& where) {
    DerivedDef d = derived_def(fd, where);
    auto it = by_name.find(fd.name);
    if (it != by_name.end()) {
      const DerivedDef& first = defs[it->second];
      if (!same(first, d))
        throw Error(first.expr != fd.expr ? "derived field " + in_quotes(fd.name) + " has two expressions, " +
                                                in_quotes(first.expr) + " (" + first.origin + ") and " + in_quotes(fd.expr)
                                          : "derived field " + in_quotes(fd.name) + " has expression " +
                                                in_quotes(fd.expr) + " twice (" + first.origin +
                                                ") with other @ terms or freq_op",
                    where, "give one of them another name, or list the field without expr to reuse the first");
      return;
    }
    by_name[fd.name] = defs.size();
    defs.push_back(std::move(d));
  };
  for (std::size_t k = 0; k < c.derived.size(); ++k) {
    const FieldConfig& fd = c.derived[k];
    if (fd.expr.empty())
      throw Error("derived field " + in_quotes(fd.name) + " has no expr",
                  fd.origin.empty() ? "config " + c.source + ", key derived[" + std::to_string(k) + "]" : fd.origin,
                  "give its expression");
    take(fd, fd.origin.empty() ? "config " + c.source + ", key derived[" + std::to_string(k) + "].expr" : fd.origin);
  }
  for (const FileConfig& f : c.files)
    for (std::size_t k = 0; k < f.fields.size(); ++k)
      if (!f.fields[k].expr.empty()) take(f.fields[k], expr_origin(c, f, k));
  // Every derived field after those it uses (depth first); a path back to a field on the
  // current path is a cycle, which no evaluation order resolves.
  std::vector<DerivedDef> order;
  std::vector<int> state(defs.size(), 0);  // 0 new, 1 on the path, 2 placed
  std::vector<std::size_t> path;
  std::function<void(std::size_t)> visit = [&](std::size_t i) {
    state[i] = 1;
    path.push_back(i);
    for (const std::string& v : defs[i].vars) {
      auto it = by_name.find(v);
      if (it == by_name.end()) continue;  // a model field (checked at end_def)
      const std::size_t j = it->second;
      if (state[j] == 1) {
        std::string cycle;
        for (auto p = std::find(path.begin(), path.end(), j); p != path.end(); ++p)
          cycle.append(defs[*p].name).append(" -> ");
        cycle.append(defs[j].name);
        throw Error(j == i ? "derived field " + in_quotes(defs[i].name) + " uses itself (" + cycle + ")"
                           : "derived fields use each other in a cycle (" + cycle + ")",
                    defs[i].origin,
                    j == i ? "give the derived field a name of its own, e.g. " + defs[i].name + "_2"
                           : "a derived field may use other derived fields, but never itself through them");
      }
      if (state[j] == 0) visit(j);
    }
    path.pop_back();
    state[i] = 2;
    order.push_back(defs[i]);
  };
  for (std::size_t i = 0; i < defs.size(); ++i)
    if (state[i] == 0) visit(i);
  return order;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A `@` term's temporal operation over the current freq_op period, and its last result.
struct Term {
  std::size_t input = 0;             // index into DerivedFields::Impl::inputs
  estuary::detail::TimeOp op = estuary::detail::TimeOp::average;
  std::vector<double> acc, value;    // the period's accumulation; the last completed period's result
  long count = 0;                    // samples in acc
  i64 k = 0;                         // the current period is (boundary k-1, boundary k = end]
  double end = kNaN;
  double done = kNaN;                // the end of the period `value` is for
};

// One compiled expression and the state of its evaluation (model ranks).
struct Expr {
  int field = -1;                  // the derived field's FieldInfo index
  std::string name, text, origin;
  std::vector<std::size_t> inputs;  // indices into DerivedFields::Impl::inputs (no @ terms)
  std::vector<Term> terms;          // the @ terms (then no inputs)
  Frequency freq_op;
  std::vector<double> slot;        // the values of the inputs (or terms) at the point evaluated
  std::vector<double> result;
  std::vector<char> skip;          // per local value: masked in an input, so not evaluated
  double last = kNaN;              // the time last evaluated
#ifdef ESTUARY_HAVE_MUPARSER
  std::unique_ptr<mu::Parser> parser;
#endif
};

// A field some expression uses: a copy of its latest values (the model's array is its own again
// once write returns, and the other inputs of the step may come later).
struct Input {
  int field = -1;
  std::vector<double> value;
  double time = kNaN;
  std::vector<std::size_t> users;                           // Exprs using its values at each step
  std::vector<std::pair<std::size_t, std::size_t>> terms;   // (Expr, Term) of the @ terms of it
};

}  // namespace

struct DerivedFields::Impl {
  const CalendarClock* clock = nullptr;  // periods of @ terms
  std::vector<DerivedDef> defs;  // in evaluation order, as added
  std::vector<int> def_field;            // FieldInfo index of each def
  std::vector<Expr> exprs;
  std::vector<Input> inputs;
  std::map<int, std::size_t> input_of;   // FieldInfo index -> inputs
};

DerivedFields::DerivedFields() : impl_(std::make_unique<Impl>()) {}
DerivedFields::~DerivedFields() = default;
bool DerivedFields::empty() const { return impl_->defs.empty(); }

void DerivedFields::add(const OutputConfig& cfg, std::vector<FieldInfo>& fields) {
  Impl& x = *impl_;
  x.defs = derived_fields(cfg);
  auto find = [&](const std::string& name) {
    return std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& f) { return f.def.name == name; });
  };
  auto describe = [](const FieldInfo& f) {
    std::string s = in_quotes(f.def.name);
    const std::size_t nlev = f.def.levels.size();
    s.append(" (grid ").append(f.def.grid).append(", ").append(std::to_string(nlev == 0 ? 1 : nlev));
    s.append(nlev > 1 ? " levels, " : " level, ").append(std::to_string(f.def.decomp.global_size())).append(" values)");
    return s;
  };
  for (const DerivedDef& d : x.defs) {
    if (find(d.name) != fields.end())
      throw Error("derived field " + in_quotes(d.name) + " has the name of a field the model declares", d.origin,
                  "give the derived field a name of its own");
    if (d.vars.empty())
      throw Error("expression " + in_quotes(d.expr) + " of derived field " + in_quotes(d.name) + " uses no field",
                  d.origin, "a derived field takes its grid, decomposition and steps from the fields it uses");
    const FieldInfo* first = nullptr;
    for (const std::string& v : d.vars) {
      auto it = find(v);
      if (it == fields.end())
        throw Error("unknown variable " + in_quotes(v) + " in expression " + in_quotes(d.expr) +
                        " of derived field " + in_quotes(d.name) + ": the model declares no field " +
                        in_quotes(v),
                    d.origin, "use the names of the fields given to def_field (or of other derived fields)");
      if (!first) {
        first = &*it;
        continue;
      }
      if (it->def.grid != first->def.grid || it->def.levels != first->def.levels ||
          it->def.decomp.global_size() != first->def.decomp.global_size())
        throw Error("fields " + describe(*first) + " and " + describe(*it) + " of derived field " +
                        in_quotes(d.name) + " differ",
                    d.origin, "an expression combines fields of one grid and levels, in the same decomposition");
    }
    FieldInfo f;
    f.def.name = d.name;
    f.def.grid = first->def.grid;
    f.def.levels = first->def.levels;
    f.def.level_units = first->def.level_units;
    f.def.decomp = first->def.decomp;  // model ranks: the inputs' (checked in prepare)
    f.def.units = d.units;
    f.def.long_name = d.long_name.empty() ? d.expr : d.long_name;
    f.def.standard_name = d.standard_name;
    f.derived = true;
    x.def_field.push_back(static_cast<int>(fields.size()));
    fields.push_back(std::move(f));  // (invalidates `first`, no longer used)
  }
}

void DerivedFields::prepare(std::vector<FieldInfo>& fields, const std::string& rank, const CalendarClock& clock) {
  Impl& x = *impl_;
  x.clock = &clock;
  for (std::size_t e = 0; e < x.defs.size(); ++e) {
    const DerivedDef& d = x.defs[e];
    FieldInfo& out = fields[static_cast<std::size_t>(x.def_field[e])];
    Expr ex;
    ex.field = x.def_field[e];
    ex.name = d.name;
    ex.text = d.expr;
    ex.origin = d.origin;
    const std::vector<i64> points = out.def.decomp.to_indices();
    ex.freq_op = d.freq_op;
    std::vector<std::size_t> masked;
    for (const std::string& v : d.vars) {
      const int fi = static_cast<int>(std::find_if(fields.begin(), fields.end(), [&](const FieldInfo& f) {
                                        return f.def.name == v;
                                      }) - fields.begin());
      const FieldInfo& in = fields[static_cast<std::size_t>(fi)];
      // add() took the decomposition of the first input: every other must hold the same points.
      if (in.def.decomp.to_indices() != points)
        throw Error("fields " + in_quotes(d.vars.front()) + " and " + in_quotes(v) + " of derived field " +
                        in_quotes(d.name) + " have different decompositions on " + rank + " (" +
                        std::to_string(points.size()) + " and " + std::to_string(in.def.decomp.size()) + " values)",
                    d.origin, "declare the fields an expression combines with the same decomposition");
      // A point masked in any input is masked in the result.
      std::vector<std::size_t> both;
      std::set_union(masked.begin(), masked.end(), in.masked.begin(), in.masked.end(), std::back_inserter(both));
      masked = std::move(both);
      auto [it, added] = x.input_of.emplace(fi, x.inputs.size());
      if (added) {
        Input inp;
        inp.field = fi;
        x.inputs.push_back(std::move(inp));
      }
      if (d.terms.empty()) {
        x.inputs[it->second].users.push_back(x.exprs.size());
        ex.inputs.push_back(it->second);
      }
      for (std::size_t k = 0; k < d.terms.size(); ++k)  // each @ term of this field (sst and its maximum, say)
        if (d.terms[k].field == v) {
          if (ex.terms.size() < d.terms.size()) ex.terms.resize(d.terms.size());
          ex.terms[k].input = it->second;
          ex.terms[k].op = time_op(d.terms[k].operation);
          x.inputs[it->second].terms.emplace_back(x.exprs.size(), k);
        }
    }
    // Masked points are not evaluated: what the model leaves there (0 on land, garbage) must not
    // divide by zero or overflow in a model that traps floating-point exceptions.
    if (!masked.empty()) {
      ex.skip.assign(points.size(), 0);
      for (std::size_t i : masked) ex.skip[i] = 1;
    }
    out.masked = std::move(masked);
    // (sized before the parser takes their addresses)
    ex.slot.assign(d.terms.empty() ? ex.inputs.size() : d.terms.size(), 0.0);
    ex.result.assign(points.size(), kFillValue);
#ifdef ESTUARY_HAVE_MUPARSER
    try {
      ex.parser = std::make_unique<mu::Parser>();
      ex.parser->DefineNameChars(kNameChars);
      if (d.terms.empty())
        for (std::size_t k = 0; k < d.vars.size(); ++k) ex.parser->DefineVar(d.vars[k], &ex.slot[k]);
      else
        for (std::size_t k = 0; k < d.terms.size(); ++k) ex.parser->DefineVar(d.terms[k].var, &ex.slot[k]);
      ex.parser->SetExpr(d.expr);
      ex.parser->Eval();  // compiles to bytecode now, not at the first step
    } catch (const mu::Parser::exception_type& err) {
      throw Error("expression " + in_quotes(d.expr) + ": " + err.GetMsg(), d.origin);
    }
#endif
    x.exprs.push_back(std::move(ex));
  }
}

bool DerivedFields::written(int f, double time, std::span<const double> data, const Put& put) {
  Impl& x = *impl_;
  auto at = x.input_of.find(f);
  if (at == x.input_of.end()) return false;
  Input& in = x.inputs[at->second];
  if (!in.users.empty()) in.value.assign(data.begin(), data.end());
  in.time = time;
  // Evaluates ex on its slots' sources (`src[k][i]` for slot k at point i) and hands the result on.
  auto evaluate = [&](Expr& ex, const std::vector<const double*>& src, double when) {
#ifdef ESTUARY_HAVE_MUPARSER
    const std::size_t m = src.size(), n = ex.result.size();
    const char* skip = ex.skip.empty() ? nullptr : ex.skip.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (skip && skip[i]) continue;  // stays the fill value
      for (std::size_t k = 0; k < m; ++k) ex.slot[k] = src[k][i];
      ex.result[i] = ex.parser->Eval();
    }
#else
    (void)src;
#endif
    ex.last = when;
    if (put(ex.field, when, ex.result)) return true;
    return written(ex.field, when, ex.result, put);  // derived fields of this one
  };
  for (std::size_t e : in.users) {
    Expr& ex = x.exprs[e];
    if (ex.last == time) continue;  // an input written twice at one time: evaluated once
    if (!std::all_of(ex.inputs.begin(), ex.inputs.end(), [&](std::size_t k) { return x.inputs[k].time == time; }))
      continue;
    std::vector<const double*> src;
    for (std::size_t k : ex.inputs) src.push_back(x.inputs[k].value.data());
    if (evaluate(ex, src, time)) return true;
  }
  // The @ terms of this field: its sample enters each one's operation; a sample that ends the
  // term's freq_op period completes the term, and the expression is evaluated once every term
  // has completed that period, at the period's end.
  for (const auto& [e, k] : in.terms) {
    Expr& ex = x.exprs[e];
    Term& t = ex.terms[k];
    const estuary::detail::TimeAccumulator acc(t.op);
    t.acc.resize(data.size());
    acc.add(t.acc, data, t.count);
    t.count += 1;
    double end = time;  // no freq_op: each write is a period
    if (ex.freq_op) {
      if (std::isnan(t.end)) {
        t.k = x.clock->first_boundary_from(ex.freq_op, time);
        t.end = x.clock->boundary(ex.freq_op, t.k);
      }
      const double eps = 1e-9 * (t.end - x.clock->boundary(ex.freq_op, t.k - 1));
      if (time < t.end - eps) continue;  // the period goes on
      end = t.end;
      while (t.end <= time + eps) t.end = x.clock->boundary(ex.freq_op, ++t.k);
    }
    t.value.resize(data.size());
    acc.result(t.acc, t.count, t.value);
    t.count = 0;
    t.done = end;
    if (ex.last == end ||
        !std::all_of(ex.terms.begin(), ex.terms.end(), [&](const Term& o) { return o.done == end; }))
      continue;
    std::vector<const double*> src;
    for (const Term& o : ex.terms) src.push_back(o.value.data());
    if (evaluate(ex, src, end)) return true;
  }
  return false;
}

}  // namespace estuary::io
