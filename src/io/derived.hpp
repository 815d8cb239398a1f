// Derived fields (FieldConfig::expr, issue 21): arithmetic expressions of the model's fields in
// the output configuration, "tas - 273.15" or "sqrt(uo*uo + vo*vo)", evaluated on the model
// ranks on their local part — where the data lies — once per step, then handed to the writers
// like a field the model wrote (the temporal operation applies to the derived values, as in
// XIOS). The expressions are compiled by muParser (src/io/derived.cpp says why that library).
//
// When: a derived field is evaluated at time t when every one of its inputs has been written
// (Output::write) with time t — by the write of its last input of the step, whatever the order
// the model writes them in. A step at which an input is not written gives no derived value.
// Derived fields may use other derived fields (no cycles); they are then evaluated in turn.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/io.hpp"

namespace estuary::io {

struct FieldInfo;  // io/output_impl.hpp

// A derived field as the configuration gives it (the first entry of that name that has an expr).
struct DerivedDef {
  std::string name, expr, origin;            // origin: where its expr is, for errors
  std::string units, long_name, standard_name;
  std::vector<std::string> vars;             // the fields the expression uses, sorted, each once
  // An expression of temporal operations (FieldConfig::at): its `@` terms in the expression's
  // variable order, each the field and operation it stands for; and their period.
  struct Term {
    std::string var;                         // "@sst", the expression's variable
    std::string field;
    Operation operation = Operation::average;
  };
  std::vector<Term> terms;                   // empty: evaluated at every step of its inputs
  Frequency freq_op;
};

// The names `expr` uses as variables (sorted), a `@` term with its `@`. Throws Error(where) on a
// syntax error with muParser's message and position, on a `@` inside a name, and when this
// build has no muParser.
std::vector<std::string> expression_variables(const std::string& expr, const std::string& where);

// Checks the expression of derived field `fd` as derived_fields does (Error at `where`): `@`
// terms mixed with fields at each step, an `at` entry for no term.
void check_expression(const FieldConfig& fd, const std::string& where);

// The derived fields of `c`, each once, every one after the derived fields it uses. Throws
// Error at the origin of the entry at fault: a syntax error, one name given two expressions,
// derived fields that use each other in a cycle.
std::vector<DerivedDef> derived_fields(const OutputConfig& c);

// Output::Impl's derived fields: their set-up on every rank, their evaluation on model ranks.
class DerivedFields {
 public:
  DerivedFields();
  ~DerivedFields();
  DerivedFields(const DerivedFields&) = delete;
  DerivedFields& operator=(const DerivedFields&) = delete;

  // Every rank, after the catalog, from the model's fields alone (the same on every rank, so
  // an error is every rank's): appends one FieldInfo a derived field (FieldInfo::derived), with
  // the grid, levels and decomposition of its inputs, which must agree. Errors name the expr's
  // place: an unknown variable, a derived name the model declares too, inputs that differ.
  void add(const OutputConfig& cfg, std::vector<FieldInfo>& fields);
  // Model ranks, after the model fields' masks: checks that the inputs hold the same points on
  // this rank, masks a derived field's point where any input is masked, compiles. `clock`
  // (the output's calendar) gives the periods of `@` terms; it must outlive this.
  void prepare(std::vector<FieldInfo>& fields, const std::string& rank, const CalendarClock& clock);
  // Model ranks: field `f` was written at `time`. Evaluates every derived field that this
  // completes and hands its values to `put` with their time: `time`, or for an expression of
  // `@` terms the end of the period this write completes (derived fields of derived fields
  // follow). `put` returns true to stop (SIGTERM); so does this then.
  using Put = std::function<bool(int, double, std::span<const double>)>;
  bool written(int f, double time, std::span<const double> data, const Put& put);
  bool empty() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary::io
