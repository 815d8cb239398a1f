// estuary's one convention for reading names (configuration keys, command-line options, binding
// arguments) into values, so every binding calls the core instead of keeping its own table:
//  - an enum E: name_of(value) gives its name, from_name<E>(name) the value back; an unknown
//    name throws estuary::Error listing the known ones (each enum's header declares both);
//  - a recipe with parameters: a static (or namespace) from_name, e.g. GridGen::from_name
//    ("lonlat:360x180") and gen::from_name("block", n, rank, ranks).
// The older spellings (sum_method_by_name, conserv_mode_by_name, gen::by_name) forward to these.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "estuary/error.hpp"

namespace estuary {

template <class E>
E from_name(std::string_view name);

namespace detail {
// from_name of an enum over the list of its values: the value whose name_of is `name` (exactly),
// else estuary::Error "unknown WHAT "name"" with the known names as the fix. No place in the
// message: a caller that knows one (a binding's call, a configuration key) rethrows with it.
template <class E, std::size_t N>
E enum_named(std::string_view name, const E (&values)[N], const char* what) {
  std::string known;
  for (E v : values) {
    if (name == name_of(v)) return v;
    known.append(known.empty() ? "use " : ", ").append(name_of(v));
  }
  std::string fault = "unknown ";
  fault.append(what).append(" \"").append(name).append("\"");
  throw Error(fault, "", known);
}
}  // namespace detail

}  // namespace estuary
