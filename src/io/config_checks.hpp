// What the readers of the output configuration (YAML in config.cpp, XIOS XML in xios_xml.cpp)
// check alike, so that both formats accept the same set-ups.
#pragma once

#include <string>

#include "estuary/io.hpp"

namespace estuary::io::detail {

// True when every period of `big` is made of whole periods of `small` (both start at the
// reference time; month periods end on whole days after it).
bool holds_whole(const Frequency& big, const Frequency& small);
// The operation called `text` (instant, average, ...); false when there is none.
bool operation_from_name(const std::string& text, Operation& op);
// One time axis a file: instant values sit at the output time, the others at the middle of
// their period with time_bnds; mixing both in one file would need two time axes.
bool mixes_time_axes(const FileConfig& file);

}  // namespace estuary::io::detail
