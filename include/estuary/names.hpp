// estuary's one convention for reading names (configuration keys, command-line options, binding
// arguments) into values, so every binding calls the core instead of keeping its own table:
//  - an enum E: name_of(value) gives its name, from_name<E>(name) the value back; an unknown
//    name throws estuary::Error listing the known ones (each enum's header declares both);
//  - a recipe with parameters: a static (or namespace) from_name, e.g. GridGen::from_name
//    ("lonlat:360x180") and gen::from_name("block", n, rank, ranks).
// The older spellings (sum_method_by_name, conserv_mode_by_name, gen::by_name) forward to these.
#pragma once

#include <string_view>

namespace estuary {

template <class E>
E from_name(std::string_view name);

}  // namespace estuary
