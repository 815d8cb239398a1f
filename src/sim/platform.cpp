// Platform parameters (no SimGrid here: building the SimGrid zones happens in replay.cpp, in
// the process that simulates).
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "estuary/error.hpp"
#include "estuary/sim.hpp"

namespace estuary::sim {

Platform Platform::torus(unsigned x, unsigned y, unsigned z) {
  Platform p;
  p.topology = Topology::torus;
  p.dims = {x, y, z};
  return p;
}

Platform Platform::fat_tree(unsigned levels, unsigned k) {
  Platform p;
  p.topology = Topology::fat_tree;
  p.levels = levels;
  // A k-ary n-tree: every switch has k ports down and k up (the leaves' switches one up link
  // per host), one link per pair: full bisection bandwidth.
  p.down.assign(levels, k);
  p.up.assign(levels, k);
  if (levels > 0) p.up[0] = 1;
  p.parallel.assign(levels, 1);
  return p;
}

Platform Platform::dragonfly(unsigned groups, unsigned chassis, unsigned routers, unsigned nodes) {
  Platform p;
  p.topology = Topology::dragonfly;
  p.groups = groups;
  p.chassis = chassis;
  p.routers = routers;
  p.nodes = nodes;
  // A balanced dragonfly (Kim et al. 2008): the links between two groups carry half of a
  // group's injection bandwidth spread over the other groups, so that uniform traffic is not
  // capped by a single global link (SimGrid's default, far below any real machine).
  if (groups > 1)
    p.group_links = std::max(1u, chassis * routers * nodes / (2 * (groups - 1)));
  return p;
}

Platform Platform::by_name(const std::string& name) {
  // Paper 004 Table 1. The paper's torus has 25 hosts per switch and its fat tree 3 switch
  // levels of radix 25 over 25 hosts each; SimGrid's torus has one host per node and its fat
  // tree is the k-ary tree below, so hosts match and the switch counts differ (docs/simulator.md).
  if (name == "torus-M") return torus(125, 125, 25);
  if (name == "torus-L") return torus(375, 125, 25);
  if (name == "fattree-M") return fat_tree(4, 25);
  if (name == "fattree-L") return fat_tree(4, 33);
  // A dragonfly group is an a x b mesh of routers all-to-all along each dimension: SimGrid's
  // chassis x routers (Cray XC layout).
  if (name == "dragonfly-MM") return dragonfly(25, 25, 25, 25);
  if (name == "dragonfly-SL") return dragonfly(125, 25, 25, 5);
  if (name == "dragonfly-LS") return dragonfly(5, 125, 125, 5);
  if (name == "dragonfly-ML") return dragonfly(75, 25, 25, 25);
  // Explicit shapes: "torus:50x50x40", "fattree:3x16" (levels, k), "dragonfly:8x8x8x4"
  // (groups, chassis, routers, hosts a router). A scale run on a machine it fills exactly puts
  // rank r on host r with the same offsets everywhere.
  const auto colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string kind = name.substr(0, colon);
    std::vector<unsigned> v;
    std::stringstream in(name.substr(colon + 1));
    std::string item;
    while (std::getline(in, item, 'x')) {
      char* end = nullptr;
      const unsigned long x = std::strtoul(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || x == 0 || x > 1000000)
        throw Error("bad number '" + item + "' in platform '" + name + "'", "sim::Platform::by_name",
                    "write torus:AxBxC, fattree:LEVELSxK or dragonfly:GROUPSxCHASSISxROUTERSxHOSTS");
      v.push_back(static_cast<unsigned>(x));
    }
    if (kind == "torus" && v.size() == 3) return torus(v[0], v[1], v[2]);
    if (kind == "fattree" && v.size() == 2) return fat_tree(v[0], v[1]);
    if (kind == "dragonfly" && v.size() == 4) return dragonfly(v[0], v[1], v[2], v[3]);
  }
  throw Error("unknown platform '" + name + "'", "sim::Platform::by_name",
              "use torus-M, torus-L, fattree-M, fattree-L, dragonfly-MM, dragonfly-SL, dragonfly-LS or "
              "dragonfly-ML (paper 004 Table 1), or a shape: torus:AxBxC, fattree:LEVELSxK, "
              "dragonfly:GROUPSxCHASSISxROUTERSxHOSTS");
}

std::int64_t Platform::hosts() const {
  switch (topology) {
    case Topology::torus:
      return std::accumulate(dims.begin(), dims.end(), std::int64_t{1},
                             [](std::int64_t a, unsigned b) { return a * b; });
    case Topology::fat_tree:
      return std::accumulate(down.begin(), down.end(), std::int64_t{1},
                             [](std::int64_t a, unsigned b) { return a * b; });
    case Topology::dragonfly:
      return std::int64_t{groups} * chassis * routers * nodes;
  }
  return 0;
}

std::string Platform::describe() const {
  std::ostringstream o;
  auto list = [&](const std::vector<unsigned>& v, const char* sep) {
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? sep : "") << v[i];
  };
  switch (topology) {
    case Topology::torus:
      o << "torus ";
      list(dims, "x");
      break;
    case Topology::fat_tree:
      o << "fat-tree " << levels << ";";
      list(down, ",");
      o << ";";
      list(up, ",");
      o << ";";
      list(parallel, ",");
      break;
    case Topology::dragonfly:
      o << "dragonfly " << groups << "," << group_links << ";" << chassis << "," << chassis_links << ";" << routers
        << "," << router_links << ";" << nodes;
      break;
  }
  o << ", " << bandwidth_Bps / 1e9 << " GB/s, " << latency_s * 1e9 << " ns, " << routing_name(routing);
  return o.str();
}

std::string routing_name(Routing routing) {
  switch (routing) {
    case Routing::minimal: return "minimal";
    case Routing::valiant: return "valiant";
    case Routing::ugal: return "ugal";
    case Routing::ugal_local: return "ugal-l";
  }
  return "?";
}

Routing parse_routing(const std::string& name) {
  for (Routing r : {Routing::minimal, Routing::valiant, Routing::ugal, Routing::ugal_local})
    if (name == routing_name(r)) return r;
  throw Error("unknown routing '" + name + "'", "sim::parse_routing", "use minimal, valiant, ugal or ugal-l");
}

}  // namespace estuary::sim
