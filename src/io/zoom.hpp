// Zoom and vertical levels of an output variable (issue 21; XIOS's zoom_domain, zoom_axis and
// interpolate_axis): what the configuration readers check alike, and the arithmetic the output
// uses — which points of a grid a zoom keeps and where they go, which levels a variable takes
// and with what weights. src/io/zoom.cpp; the output's use of it is in output_catalog.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "estuary/io.hpp"

namespace estuary::io::detail {

// The checks both readers (YAML, XIOS XML) make on a zoom, levels and an interpolation, with
// Error(what, where, fix) at `where`: latitudes out of order or beyond ±90, empty or reversed
// index ranges, levels not strictly increasing, interpolation values not strictly monotonic,
// levels given with an interpolation.
void check_zoom(const FieldConfig::Zoom& z, const std::string& where);
void check_levels(const FieldConfig& f, const std::string& where);

// "lon [170, -170], lat [-10, 10]" or "i [0, 9], j [2, 5]": a zoom for messages.
std::string describe(const FieldConfig::Zoom& z);

// True when longitude `lon` is in the box's longitudes; `offset` is its distance east of the
// box's west edge in [0, 360) (the order of the zoomed columns, and the unwrapped longitude
// west + offset that keeps the written axis monotonic across the date line).
bool lon_in_box(const FieldConfig::Zoom& z, double lon, double& offset);
inline bool lat_in_box(const FieldConfig::Zoom& z, double lat) { return lat >= z.south && lat <= z.north; }

// A variable's vertical axis: for each written level k, the source levels lo[k], hi[k] and
// weights (value = w_lo * v[lo] + w_hi * v[hi]); fill[k]: the fill value (outside the levels'
// range without extrapolation). A selection has w_lo = 1, w_hi = 0, hi = lo.
struct LevelMap {
  std::vector<double> values;  // the written axis
  std::vector<std::int64_t> lo, hi;
  std::vector<double> w_lo, w_hi;
  std::vector<char> fill;
  bool interpolated = false;  // needs both levels (a second transfer)
};

// The level map of field config `fc` for a field with `levels` (in `units`). Throws Error at
// fc.levels_origin (else fc.origin): an index beyond the levels, an interpolation of a field
// without levels or with levels not strictly monotonic, a `coordinate` that is not the level axis.
LevelMap level_map(const FieldConfig& fc, const std::vector<double>& levels, const std::string& units);

// CF names of a level axis in `units`: depth (m), air_pressure (Pa, hPa), else model_level_number.
const char* level_standard_name(const std::string& units);

}  // namespace estuary::io::detail
