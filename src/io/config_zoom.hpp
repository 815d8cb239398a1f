// The YAML keys of zoom and vertical levels (src/io/config_zoom.cpp): a field's `zoom`, `levels`
// and `interpolate_levels`, a file's `zoom` (the default of its fields). Errors name the file,
// the line and the key, as every key of the `output:` section does.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/yaml_file.hpp"
#include "estuary/io.hpp"

namespace estuary::io::detail {

// `zoom: {lon: [w, e], lat: [s, n]}` or `zoom: {i: [i0, i1], j: [j0, j1]}` at `key`.
FieldConfig::Zoom yaml_zoom(const estuary::detail::config::YamlFile& doc, const YAML::Node& n, const std::string& key);

// The field entry `v`'s zoom, levels and interpolate_levels (at key prefix `q`) into `fd`;
// `file_zoom` (with its place) is the zoom of fields that give none.
void yaml_field_levels_and_zoom(const estuary::detail::config::YamlFile& doc, const YAML::Node& v, const std::string& q,
                                const FieldConfig::Zoom& file_zoom, const std::string& file_zoom_origin,
                                FieldConfig& fd);

}  // namespace estuary::io::detail
