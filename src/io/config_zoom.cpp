// The YAML keys of zoom and vertical levels: a file's or a field's `zoom`, a field's `levels`
// (selection by index) and `interpolate_levels` (linear interpolation to given values). The
// checks common with the XIOS reader are io/zoom.cpp's.
#include "io/config_zoom.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "io/zoom.hpp"

namespace estuary::io::detail {

using estuary::detail::config::YamlFile;

namespace {

// A two-element list at `key` ([west, east], [i0, i1]).
std::pair<YAML::Node, YAML::Node> two(const YamlFile& doc, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence() || n.size() != 2) doc.fail(n, key, "expected a list of two values, [first, last]");
  return {n[0], n[1]};
}

}  // namespace

FieldConfig::Zoom yaml_zoom(const YamlFile& doc, const YAML::Node& n, const std::string& key) {
  FieldConfig::Zoom z;
  if (!n.IsMap())
    doc.fail(n, key, "a zoom must be a map",
             "give a lon-lat box {lon: [west, east], lat: [south, north]} or index ranges {i: [i0, i1], j: [j0, j1]}");
  doc.keys(n, key, {"lon", "lat", "i", "j"});
  const bool box = n["lon"] || n["lat"], index = n["i"] || n["j"];
  if (box && index) doc.fail(n, key, "a zoom is either a lon-lat box or index ranges, not both");
  if (!box && !index) doc.fail(n, key, "an empty zoom", "give lon and/or lat, or i and/or j");
  if (box) {
    z.kind = FieldConfig::Zoom::Kind::box;
    if (const YAML::Node x = n["lon"]) {
      const auto [a, b] = two(doc, x, key + ".lon");
      z.west = doc.number(a, key + ".lon");
      z.east = doc.number(b, key + ".lon");
    }
    if (const YAML::Node x = n["lat"]) {
      const auto [a, b] = two(doc, x, key + ".lat");
      z.south = doc.number(a, key + ".lat");
      z.north = doc.number(b, key + ".lat");
    }
  } else {
    z.kind = FieldConfig::Zoom::Kind::index;
    constexpr long long most = std::numeric_limits<std::int64_t>::max() / 2;
    if (const YAML::Node x = n["i"]) {
      const auto [a, b] = two(doc, x, key + ".i");
      z.i0 = doc.integer(a, key + ".i", 0, most);
      z.i1 = doc.integer(b, key + ".i", 0, most);
    }
    if (const YAML::Node x = n["j"]) {
      const auto [a, b] = two(doc, x, key + ".j");
      z.j0 = doc.integer(a, key + ".j", 0, most);
      z.j1 = doc.integer(b, key + ".j", 0, most);
    }
  }
  try {
    check_zoom(z, doc.where(n, key));
  } catch (const Error& e) {
    doc.fail(n, key, e.fault(), e.fix());
  }
  return z;
}

void yaml_field_levels_and_zoom(const YamlFile& doc, const YAML::Node& v, const std::string& q,
                                const FieldConfig::Zoom& file_zoom, const std::string& file_zoom_origin,
                                FieldConfig& fd) {
  if (v.IsMap() && v["zoom"]) {
    const YAML::Node x = v["zoom"];
    fd.zoom = yaml_zoom(doc, x, q + ".zoom");
    fd.zoom_origin = doc.where(x, q + ".zoom");
  } else if (file_zoom.kind != FieldConfig::Zoom::Kind::none) {
    fd.zoom = file_zoom;
    fd.zoom_origin = file_zoom_origin;
  }
  if (!v.IsMap()) return;
  const YAML::Node lev = v["levels"], ip = v["interpolate_levels"];
  if (lev && ip)
    doc.fail(ip, q + ".interpolate_levels", "levels and interpolate_levels together",
             "select levels by index (levels) or interpolate to values (interpolate_levels), not both");
  if (lev) {
    const std::string key = q + ".levels";
    if (!lev.IsSequence() || lev.size() == 0)
      doc.fail(lev, key, "`levels` must be a non-empty list of level indices (0 = the first level)");
    for (const YAML::Node& i : lev) fd.level_indices.push_back(doc.integer(i, key, 0, std::numeric_limits<int>::max()));
    fd.levels_origin = doc.where(lev, key);
  }
  if (ip) {
    const std::string key = q + ".interpolate_levels";
    if (!ip.IsMap()) doc.fail(ip, key, "`interpolate_levels` must be a map", "give {values: [10, 50, 100]}");
    doc.keys(ip, key, {"values", "coordinate", "extrapolate"});
    const YAML::Node vals = ip["values"];
    if (!vals || !vals.IsSequence() || vals.size() == 0)
      doc.fail(vals ? vals : ip, key + ".values", "`values` must be a non-empty list of level values");
    for (const YAML::Node& x : vals) {
      const double d = doc.number(x, key + ".values");
      if (!std::isfinite(d)) doc.fail(x, key + ".values", "a level value is not finite");
      fd.interpolate_levels.values.push_back(d);
    }
    if (const YAML::Node c = ip["coordinate"]) fd.interpolate_levels.coordinate = doc.scalar(c, key + ".coordinate");
    if (const YAML::Node e = ip["extrapolate"])
      fd.interpolate_levels.extrapolate = doc.boolean(e, key + ".extrapolate");
    fd.levels_origin = doc.where(ip, key);
  }
  if (lev || ip) {
    try {
      check_levels(fd, fd.levels_origin);
    } catch (const Error& e) {
      doc.fail(lev ? lev : ip, q + (lev ? ".levels" : ".interpolate_levels"), e.fault(), e.fix());
    }
  }
}

}  // namespace estuary::io::detail
