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
    // Every name that is not a function or constant is taken as a variable here; which of them
    // are fields is known only at end_def, when the model has declared its fields.
    static double scratch = 0;
    p.SetVarFactory([](const mu::char_type*, void*) -> mu::value_type* { return &scratch; }, nullptr);
    p.SetExpr(expr);
    std::vector<std::string> vars;
    for (const auto& kv : p.GetUsedVar()) vars.push_back(kv.first);
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

std::vector<DerivedDef> derived_fields(const OutputConfig& c) {
  std::vector<DerivedDef> defs;  // in the order the configuration gives them
  std::map<std::string, std::size_t> by_name;
  for (const FileConfig& f : c.files)
    for (std::size_t k = 0; k < f.fields.size(); ++k) {
      const FieldConfig& fd = f.fields[k];
      if (fd.expr.empty()) continue;
      const std::string where = expr_origin(c, f, k);
      auto it = by_name.find(fd.name);
      if (it != by_name.end()) {
        const DerivedDef& first = defs[it->second];
        if (first.expr != fd.expr)
          throw Error("derived field " + in_quotes(fd.name) + " has two expressions, " + in_quotes(first.expr) + " (" +
                          first.origin + ") and " + in_quotes(fd.expr),
                      where, "give one of them another name, or list the field without expr to reuse the first");
        continue;
      }
      DerivedDef d;
      d.name = fd.name;
      d.expr = fd.expr;
      d.origin = where;
      d.units = fd.units;
      d.long_name = fd.long_name;
      d.standard_name = fd.standard_name;
      d.vars = expression_variables(fd.expr, where);
      by_name[fd.name] = defs.size();
      defs.push_back(std::move(d));
    }
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

// One compiled expression and the state of its evaluation (model ranks).
struct Expr {
  int field = -1;                  // the derived field's FieldInfo index
  std::string name, text, origin;
  std::vector<std::size_t> inputs;  // indices into DerivedFields::Impl::inputs
  std::vector<double> slot;        // the values of the inputs at the point evaluated
  std::vector<double> result;
  std::vector<char> skip;          // per local value: masked in an input, so not evaluated
  double last = std::numeric_limits<double>::quiet_NaN();  // the time last evaluated
#ifdef ESTUARY_HAVE_MUPARSER
  std::unique_ptr<mu::Parser> parser;
#endif
};

// A field some expression uses: a copy of its latest values (the model's array is its own again
// once write returns, and the other inputs of the step may come later).
struct Input {
  int field = -1;
  std::vector<double> value;
  double time = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::size_t> users;  // Exprs
};

}  // namespace

struct DerivedFields::Impl {
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

void DerivedFields::prepare(std::vector<FieldInfo>& fields, const std::string& rank) {
  Impl& x = *impl_;
  for (std::size_t e = 0; e < x.defs.size(); ++e) {
    const DerivedDef& d = x.defs[e];
    FieldInfo& out = fields[static_cast<std::size_t>(x.def_field[e])];
    Expr ex;
    ex.field = x.def_field[e];
    ex.name = d.name;
    ex.text = d.expr;
    ex.origin = d.origin;
    const std::vector<i64> points = out.def.decomp.to_indices();
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
      x.inputs[it->second].users.push_back(x.exprs.size());
      ex.inputs.push_back(it->second);
    }
    // Masked points are not evaluated: what the model leaves there (0 on land, garbage) must not
    // divide by zero or overflow in a model that traps floating-point exceptions.
    if (!masked.empty()) {
      ex.skip.assign(points.size(), 0);
      for (std::size_t i : masked) ex.skip[i] = 1;
    }
    out.masked = std::move(masked);
    ex.slot.assign(ex.inputs.size(), 0.0);  // (sized before the parser takes their addresses)
    ex.result.assign(points.size(), kFillValue);
#ifdef ESTUARY_HAVE_MUPARSER
    try {
      ex.parser = std::make_unique<mu::Parser>();
      for (std::size_t k = 0; k < d.vars.size(); ++k) ex.parser->DefineVar(d.vars[k], &ex.slot[k]);
      ex.parser->SetExpr(d.expr);
      ex.parser->Eval();  // compiles to bytecode now, not at the first step
    } catch (const mu::Parser::exception_type& err) {
      throw Error("expression " + in_quotes(d.expr) + ": " + err.GetMsg(), d.origin);
    }
#endif
    x.exprs.push_back(std::move(ex));
  }
}

bool DerivedFields::written(int f, double time, std::span<const double> data,
                            const std::function<bool(int, std::span<const double>)>& put) {
  Impl& x = *impl_;
  auto at = x.input_of.find(f);
  if (at == x.input_of.end()) return false;
  Input& in = x.inputs[at->second];
  in.value.assign(data.begin(), data.end());
  in.time = time;
  for (std::size_t e : in.users) {
    Expr& ex = x.exprs[e];
    if (ex.last == time) continue;  // an input written twice at one time: evaluated once
    if (!std::all_of(ex.inputs.begin(), ex.inputs.end(), [&](std::size_t k) { return x.inputs[k].time == time; }))
      continue;
    ex.last = time;
#ifdef ESTUARY_HAVE_MUPARSER
    std::vector<const double*> src;
    for (std::size_t k : ex.inputs) src.push_back(x.inputs[k].value.data());
    const std::size_t m = src.size(), n = ex.result.size();
    const char* skip = ex.skip.empty() ? nullptr : ex.skip.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (skip && skip[i]) continue;  // stays the fill value
      for (std::size_t k = 0; k < m; ++k) ex.slot[k] = src[k][i];
      ex.result[i] = ex.parser->Eval();
    }
#endif
    if (put(ex.field, ex.result)) return true;
    if (written(ex.field, time, ex.result, put)) return true;  // derived fields of this one
  }
  return false;
}

}  // namespace estuary::io
