// The coupler's configuration: the format of a file (read_coupling_config picks the namcouple
// reader, namcouple.cpp, or the YAML one, config_yaml.cpp) and the vocabulary's names.
#include <cstdlib>
#include <sstream>
#include <string>
#include <tuple>

#include "common/checked.hpp"
#include "couple/config_checks.hpp"
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"

namespace estuary {

using detail::config::lower;

CouplingSetup read_coupling_config(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : lower(path.substr(dot));
  if (ext == ".yaml" || ext == ".yml") return read_coupling_yaml(path);
  const auto text = detail::read_config_file(path);
  if (!text) throw Error("cannot read the configuration file", path, "check the path and permissions");
  std::istringstream in(*text);
  for (std::string l; std::getline(in, l);) {
    const auto first = l.find_first_not_of(" \t\r");
    if (first != std::string::npos && l[first] == '$') return read_namcouple(path);
  }
  return read_coupling_yaml(path);
}

const char* name_of(FieldStatus s) {
  switch (s) {
    case FieldStatus::exported: return "EXPORTED";
    case FieldStatus::expout: return "EXPOUT";
    case FieldStatus::input: return "INPUT";
    case FieldStatus::output: return "OUTPUT";
  }
  return "?";
}

const char* name_of(LocTrans t) {
  switch (t) {
    case LocTrans::instant: return "INSTANT";
    case LocTrans::accumul: return "ACCUMUL";
    case LocTrans::average: return "AVERAGE";
    case LocTrans::t_min: return "T_MIN";
    case LocTrans::t_max: return "T_MAX";
  }
  return "?";
}

bool ScriprSpec::takes_neighbors() const {
  return method == "DISTWGT" || method == "GAUSWGT" || method.rfind("LOCC", 0) == 0;
}

int CouplingConfig::line() const {
  const auto colon = origin.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(origin.c_str() + colon + 1);
}

bool CouplingConfig::operator==(const CouplingConfig& o) const {
  auto key = [](const CouplingConfig& c) {
    return std::tie(c.src_fields, c.dst_fields, c.period, c.restart_file, c.input_file, c.status,
                    c.src_grid, c.dst_grid, c.lag, c.seq, c.transforms, c.loctrans, c.mapping,
                    c.scripr, c.interpolation, c.conserv, c.blasold, c.blasnew, c.checkin, c.checkout,
                    c.src_component, c.dst_component);
  };
  return key(*this) == key(o);
}

bool CouplingSetup::operator==(const CouplingSetup& o) const {
  auto key = [](const CouplingSetup& s) {
    return std::tie(s.runtime, s.log_level, s.no_restart, s.map_decomposition, s.weight_option,
                    s.timeout, s.timeline, s.start_date, s.calendar, s.schedule, s.couplings);
  };
  return key(*this) == key(o);
}

}  // namespace estuary
