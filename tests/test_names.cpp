// The names the bindings (Python, C) read, owned by the core (estuary/names.hpp): every value's
// name reads back to it, the documented spellings are the names, an unknown name throws
// estuary::Error listing the known ones; and the small rules the Python bindings used to keep
// for themselves (grid dims per kind, the kind of a grid given by dims, a configuration line's
// number, which SCRIPR methods take a neighbour count).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"
#include "estuary/names.hpp"
#include "estuary/remap.hpp"
#include "estuary/weightgen.hpp"

namespace {

using i64 = std::int64_t;

// The spellings the user guide and the Python docstrings give, against the values.
template <class E>
void expect_names(const std::vector<std::pair<const char*, E>>& table) {
  std::string listed;
  for (const auto& [name, value] : table) {
    EXPECT_STREQ(name_of(value), name);
    EXPECT_EQ(estuary::from_name<E>(name), value) << name;
  }
  try {
    estuary::from_name<E>("no-such-name");
    ADD_FAILURE() << "an unknown name was read";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-name"), std::string::npos) << e.what();
    for (const auto& [name, value] : table)  // the fix lists every known name
      EXPECT_NE(e.fix().find(name), std::string::npos) << e.fix();
  }
  // Exact names: no case folding, no prefix.
  EXPECT_THROW(estuary::from_name<E>(""), estuary::Error);
}

TEST(Names, RemapLocationAndOrder) {
  expect_names<estuary::RemapLocation>({{"src", estuary::RemapLocation::src}, {"dst", estuary::RemapLocation::dst}});
  expect_names<estuary::RemapOrder>({{"bfb", estuary::RemapOrder::bfb}, {"sum", estuary::RemapOrder::sum}});
  EXPECT_THROW(estuary::from_name<estuary::RemapOrder>("BFB"), estuary::Error);
}

TEST(Names, GridKind) {
  using K = estuary::GridKind;
  expect_names<K>({{"lonlat", K::lonlat},
                   {"gaussian", K::gaussian},
                   {"reduced_gaussian", K::reduced_gaussian},
                   {"curvilinear", K::curvilinear},
                   {"unstructured", K::unstructured}});
}

TEST(Names, ConservNormalization) {
  using N = estuary::ConservNormalization;
  expect_names<N>({{"fracarea", N::fracarea}, {"destarea", N::destarea}, {"none", N::none}});
}

TEST(Names, IoMode) {
  using M = estuary::io::Mode;
  expect_names<M>({{"serverless", M::serverless}, {"server", M::server}});
}

TEST(Names, GridDimsOfKind) {
  using K = estuary::GridKind;
  const std::vector<i64> two{36, 18}, one{500}, three{2, 3, 4}, none;
  for (K k : {K::lonlat, K::gaussian, K::curvilinear}) {
    EXPECT_EQ(estuary::grid_dims_of(k, two), two);
    EXPECT_THROW(estuary::grid_dims_of(k, one), estuary::Error);  // a 2-D kind needs (nx, ny)
  }
  for (K k : {K::reduced_gaussian, K::unstructured}) {
    EXPECT_EQ(estuary::grid_dims_of(k, one), one);
    EXPECT_EQ(estuary::grid_dims_of(k, two), std::vector<i64>{36 * 18});  // folded, as the C API passes it
  }
  for (K k : {K::lonlat, K::unstructured}) {
    EXPECT_THROW(estuary::grid_dims_of(k, three), estuary::Error);
    EXPECT_THROW(estuary::grid_dims_of(k, none), estuary::Error);
  }
  EXPECT_EQ(estuary::grid_kind_of_dims(2), K::curvilinear);
  EXPECT_EQ(estuary::grid_kind_of_dims(1), K::unstructured);
}

TEST(Names, ConfigurationLineAndNeighbours) {
  estuary::CouplingConfig c;
  c.origin = "namcouple:42";
  EXPECT_EQ(c.line(), 42);
  c.origin = "/runs/a:b/config.yaml:7";  // the last colon
  EXPECT_EQ(c.line(), 7);
  c.origin = "";
  EXPECT_EQ(c.line(), 0);
  estuary::ScriprSpec s;
  for (const char* m : {"DISTWGT", "GAUSWGT", "LOCCUNIF", "LOCCDIST", "LOCCGAUS"}) {
    s.method = m;
    EXPECT_TRUE(s.takes_neighbors()) << m;
  }
  for (const char* m : {"BILINEAR", "BICUBIC", "CONSERV", "SPMAP", "CALLBACK"}) {
    s.method = m;
    EXPECT_FALSE(s.takes_neighbors()) << m;
  }
}

}  // namespace
