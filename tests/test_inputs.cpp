// Inputs are checked (issue 17): every integer from a file or an API is range-checked, products
// of sizes are checked for overflow, any byte sequence in a configuration gives an estuary
// error naming the file and line, the same name twice is refused at parse, more neighbours
// than source points is an error, and configurations are bounded in size. Each test fails if
// its check is removed: it asserts the estuary::Error and the place (file and line, or key).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "estuary/couple_config.hpp"
#include "estuary/decomp.hpp"
#include "estuary/decomp_gen.hpp"
#include "estuary/error.hpp"
#include "estuary/grid.hpp"
#include "estuary/io.hpp"
#include "estuary/weightgen.hpp"
#include "estuary/settings.hpp"

namespace fs = std::filesystem;
using estuary::Error;

namespace {

class Inputs : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ESTUARY_COUPLE_TIMEOUT");
    estuary::Settings::reload();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("estuary_inputs_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

// Runs `read` and checks the Error: its place is `where` and its message holds `expected`.
template <class Read>
void expect_error(Read read, const std::string& where, const std::string& expected) {
  try {
    read();
    ADD_FAILURE() << "no error (expected: " << expected << " at " << where << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "message: " << e.what() << "\nshould contain: " << expected;
  }
}

// A namcouple with one DISTWGT entry at line 9; `line2` and `scripr` replace lines 10 and 13.
std::string namcouple(const std::string& fields = "A B", const std::string& line2 = "10 10 20 20 ga gb",
                      const std::string& scripr = "DISTWGT LR SCALAR LATLON 1 4") {
  return "# inputs\n $NFIELDS\n 2\n $END\n $RUNTIME\n 86400\n $END\n $STRINGS\n" +  // 1-8
         fields + " 1 3600 1 r.nc EXPORTED\n" +                                     // 9
         line2 + "\n" +                                                             // 10
         "P 0 P 0\n"                                                                // 11
         "SCRIPR\n" +                                                               // 12
         scripr + "\n $END\n";                                                      // 13, 14
}

// A coupling YAML whose source side is `source` (line 3).
std::string yaml(const std::string& source = "{field: A, grid: ga}",
                 const std::string& scripr = "{method: distwgt, neighbors: 4}") {
  return "runtime: 86400\n"                                  // 1
         "couplings:\n"                                      // 2
         "  - source: " + source + "\n"                      // 3
         "    target: {field: B, grid: gb}\n"                // 4
         "    period: 3600\n"                                // 5
         "    transforms:\n"                                 // 6
         "      - scripr: " + scripr + "\n";                 // 7
}

// ---- "ny: 0 for a grid in a YAML or namcouple" ----

TEST_F(Inputs, ZeroGridSizeIsAnErrorNamingFileAndLine) {
  const std::string nam = write("namcouple", namcouple("A B", "10 0 20 20 ga gb"));
  expect_error([&] { estuary::read_namcouple(nam); }, "namcouple " + nam + ":10", "a grid size 0 is outside [1, ");
  const std::string y = write("c.yaml", yaml("{field: A, grid: ga, nx: 10, ny: 0}"));
  expect_error([&] { estuary::read_coupling_yaml(y); }, y + ":3, key couplings[0].source.ny", "couplings[0].source.ny 0 is outside [1, ");
  // nx without ny (ny then 0) is refused as well.
  const std::string y2 = write("c2.yaml", yaml("{field: A, grid: ga, nx: 10}"));
  expect_error([&] { estuary::read_coupling_yaml(y2); }, y2 + ":3, key couplings[0].source.nx", "gives nx without ny");
}

// ---- integer keys that overflow ----

TEST_F(Inputs, OverflowingIntegersAreRangeChecked) {
  const std::string y = write("c.yaml", yaml("{field: A, grid: ga}", "{method: distwgt, neighbors: 4294967297}"));
  expect_error([&] { estuary::read_coupling_yaml(y); }, y + ":7, key couplings[0].transforms[0].scripr.neighbors",
               "couplings[0].transforms[0].scripr.neighbors 4294967297 is outside [1, 2147483647]");
  const std::string nam = write("namcouple", namcouple("A B", "10 10 20 20 ga gb", "DISTWGT LR SCALAR LATLON 1 4294967297"));
  expect_error([&] { estuary::read_namcouple(nam); }, "namcouple " + nam + ":13",
               "the number of neighbours '4294967297' has more than the 4 characters OASIS3-MCT reads there");
  // Beyond 64 bits: out of range too, not wrapped and not "not an integer".
  const std::string nam2 = write("namcouple2", namcouple("A B", "10 99999999999999999999 20 20 ga gb"));
  expect_error([&] { estuary::read_namcouple(nam2); }, "namcouple " + nam2 + ":10",
               "a grid size '99999999999999999999' has more than the 8 characters OASIS3-MCT reads there");
  // A grid whose nx * ny overflows int64.
  const std::string nam3 = write("namcouple3", namcouple("A B", "4294967296 4294967296 20 20 ga gb"));
  // (Eight digits each cannot overflow: a namcouple size is at most 99999999, OASIS's I8.)
  expect_error([&] { estuary::read_namcouple(nam3); }, "namcouple " + nam3 + ":10", "has more than the 8 characters");
  const std::string y3 = write("c3.yaml", yaml("{field: A, grid: ga, nx: 4294967296, ny: 4294967296}"));
  expect_error([&] { estuary::read_coupling_yaml(y3); }, y3 + ":3, key couplings[0].source.ny", "overflows a 64-bit integer");
  // The output YAML's integers too.
  expect_error([] { estuary::io::OutputConfig::from_yaml_string(
                        "output:\n  writers: 4294967297\n  files: [{name: f, output_freq: 1h, fields: [a]}]\n", "o.yaml"); },
               "o.yaml:2, key output.writers", "expected a positive integer, got '4294967297'");
}

// ---- an N-D box whose global size overflows; generator arguments ----

TEST_F(Inputs, DecompositionSizesAreChecked) {
  const std::int64_t big = std::int64_t{1} << 32;
  try {
    estuary::Decomp::box({big, big, big}, {0, 0, 0}, {1, 1, 1});
    ADD_FAILURE() << "no error for a 2^96-point box";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the box's global size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overflows a 64-bit integer"), std::string::npos) << e.what();
  }
  // start + count beyond int64 (was a signed overflow in the bounds check).
  EXPECT_THROW(estuary::Decomp::box({10}, {INT64_MAX}, {INT64_MAX}), Error);
  // A stripe whose last element overflows int64.
  try {
    estuary::Decomp::stripes(INT64_MAX, {{1, 4, INT64_MAX / 2}});
    ADD_FAILURE() << "no error for an overflowing stripe";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reaches beyond a 64-bit integer"), std::string::npos) << e.what();
    EXPECT_NE(e.where().find("stripe 0"), std::string::npos) << e.what();
  }
  // Local sizes whose sum overflows.
  EXPECT_THROW(estuary::Decomp::stripes(INT64_MAX, {{0, INT64_MAX, 0}, {0, INT64_MAX, 0}}), Error);
  // Generators: ranks < 1 was a division by zero (SIGFPE); rank outside [0, ranks).
  for (const std::string& k : estuary::gen::kinds()) {
    SCOPED_TRACE(k);
    EXPECT_THROW(estuary::gen::by_name(k, 100, 0, 0), Error);
    EXPECT_THROW(estuary::gen::by_name(k, 100, 3, 2), Error);
    EXPECT_THROW(estuary::gen::by_name(k, -1, 0, 1), Error);
  }
  EXPECT_THROW(estuary::gen::messages_pair(big, big, 1, 0, 1), Error);
  EXPECT_THROW(estuary::gen::messages_pair(-4, 1, 0, 1), Error);
}

// ---- a non-UTF-8 byte in a configuration ----

TEST_F(Inputs, NonUtf8BytesNameFileLineAndColumn) {
  std::string text = namcouple();
  text.insert(text.find("A B 1"), "\xff");  // line 9, column 1
  const std::string nam = write("namcouple", text);
  expect_error([&] { estuary::read_namcouple(nam); }, "namcouple " + nam + ":9", "not UTF-8 (0xFF) at column 1");
  // The format sniffing of read_coupling_config reports it as well.
  expect_error([&] { estuary::read_coupling_config(nam); }, nam + ":9", "not UTF-8 (0xFF)");

  std::string y = yaml();
  y.insert(y.find("grid: ga"), "\xc3(");  // a truncated two-byte sequence, line 3
  const std::string yp = write("c.yaml", y);
  expect_error([&] { estuary::read_coupling_yaml(yp); }, yp + ":3", "not UTF-8 (0xC3)");

  // An overlong encoding of '/' and a UTF-16 surrogate are refused; real UTF-8 is accepted.
  const std::string good = write("u.yaml", yaml("{field: \"Temp\xc3\xa9rature\", grid: ga}"));
  EXPECT_EQ(estuary::read_coupling_yaml(good).couplings.at(0).src_fields.at(0), "Temp\xc3\xa9rature");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    const std::string p = write("bad.yaml", "runtime: 1\n# " + std::string(bad) + "\ncouplings: []\n");
    expect_error([&] { estuary::read_coupling_yaml(p); }, p + ":2", "at column 3");
  }
  const char with_nul[] = "runtime: 1\n#\0\ncouplings: []\n";
  const std::string nul = write("nul.yaml", std::string(with_nul, sizeof with_nul - 1));
  expect_error([&] { estuary::read_coupling_yaml(nul); }, nul + ":2", "a NUL byte at column 2");

  const std::string out = "output:\n  files:\n    - {name: f\xfe, output_freq: 1h, fields: [a]}\n";
  expect_error([&] { estuary::io::OutputConfig::from_yaml_string(out, "o.yaml"); }, "o.yaml:3",
               "not UTF-8 (0xFE) at column 15");
  const std::string op = write("o.yaml", out);
  expect_error([&] { estuary::io::OutputConfig::from_yaml_file(op); }, op + ":3", "not UTF-8 (0xFE)");
}

// ---- the same name twice ----

TEST_F(Inputs, SameFieldTwiceInOneCouplingIsRefused) {
  const std::string nam = write("namcouple", namcouple("A:A B:C"));
  expect_error([&] { estuary::read_namcouple(nam); }, "namcouple " + nam + ":9",
               "source field 'A' listed twice in one coupling");
  const std::string nam2 = write("namcouple2", namcouple("A:C B:B"));
  expect_error([&] { estuary::read_namcouple(nam2); }, "namcouple " + nam2 + ":9",
               "target field 'B' listed twice in one coupling");
  std::string text = yaml("{fields: [A, A], grid: ga}");
  text.replace(text.find("{field: B"), 9, "{fields: [B, C]");
  const std::string y = write("c.yaml", text);
  expect_error([&] { estuary::read_coupling_yaml(y); }, y + ":3, key couplings[0]", "source field 'A' listed twice in one coupling");
}

TEST_F(Inputs, SameCouplingTwiceIsRefusedNamingTheFirst) {
  std::string text = namcouple();
  const std::string entry = text.substr(text.find("A B 1"), text.find(" $END\n", text.find("A B 1")) - text.find("A B 1"));
  text.insert(text.find(" $END\n", text.find("A B 1")), entry);  // lines 14-18 repeat 9-13
  const std::string nam = write("namcouple", text);
  expect_error([&] { estuary::read_namcouple(nam); }, "namcouple " + nam + ":14",
               "the exchange A -> B is configured twice (first at " + nam + ":9)");
  std::string y = yaml();
  y += y.substr(y.find("  - source"));  // the coupling again, from line 8
  const std::string yp = write("c.yaml", y);
  expect_error([&] { estuary::read_coupling_yaml(yp); }, yp + ":8, key couplings[1]",
               "couplings[1]: the exchange A -> B is configured twice (first at " + yp + ":3)");
  // The same fields between other components are another exchange.
  std::string z = yaml("{component: c1, field: A, grid: ga}");
  const std::string z2 = yaml("{component: c2, field: A, grid: ga}");
  z += z2.substr(z2.find("  - source"));
  EXPECT_EQ(estuary::read_coupling_yaml(write("z.yaml", z)).couplings.size(), 2u);
}

TEST_F(Inputs, DuplicateYamlKeysAreRefused) {
  // yaml-cpp keeps both and answers with the first: the second would be silently ignored.
  const std::string y = write("c.yaml", yaml("{field: A, grid: ga, grid: gc}"));
  expect_error([&] { estuary::read_coupling_yaml(y); }, y + ":3, key couplings[0].source.grid", "key 'grid' given twice in couplings[0].source");
  const std::string top = write("t.yaml", "runtime: 1\nruntime: 2\ncouplings: []\n");
  expect_error([&] { estuary::read_coupling_yaml(top); }, top + ":2, key runtime", "key 'runtime' given twice");
  expect_error([] { estuary::io::OutputConfig::from_yaml_string(
                        "output:\n  writers: 1\n  writers: 2\n  files: [{name: f, output_freq: 1h, fields: [a]}]\n",
                        "o.yaml"); },
               "o.yaml:3, key output.writers", "key 'writers' given twice in output");
  // Files and fields twice in the output YAML.
  expect_error([] { estuary::io::OutputConfig::from_yaml_string(
                        "output:\n  files:\n    - {name: f, output_freq: 1h, fields: [a]}\n"
                        "    - {name: f, output_freq: 2h, fields: [b]}\n", "o.yaml"); },
               "o.yaml:4, key output.files[1] (f).name", "file listed twice");
  expect_error([] { estuary::io::OutputConfig::from_yaml_string(
                        "output:\n  files:\n    - {name: f, output_freq: 1h, fields: [a, a]}\n", "o.yaml"); },
               "o.yaml:3, key output.files[0] (f).fields[1]", "field listed twice");
}

// ---- a method parameter that makes no sense for the grids ----

TEST_F(Inputs, MoreNeighboursThanSourcePointsIsAnError) {
  const estuary::GridGen sg = estuary::GridGen::lonlat(4, 3), dg = estuary::GridGen::lonlat(6, 4);
  const estuary::Grid src = sg.make(), dst = dg.make();
  estuary::DistanceWeightOptions o;
  o.neighbors = 12;  // every point: fine
  EXPECT_EQ(estuary::distance_weights(src, dst, MPI_COMM_SELF, o).size(), 12 * dg.size());
  o.neighbors = 13;
  try {
    estuary::distance_weights(src, dst, MPI_COMM_SELF, o);
    ADD_FAILURE() << "no error for 13 neighbours of 12 points";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("13 neighbours asked for, but the source grid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has only 12 points"), std::string::npos) << e.what();
  }
  // Searching only the unmasked points: the land points do not count.
  const estuary::Grid land = estuary::GridGen::lonlat(36, 18).with_land().make();
  std::int64_t wet = 0;
  for (std::int64_t k = 0; k < land.size(); ++k) wet += land.valid(k) ? 1 : 0;
  ASSERT_LT(wet, land.size());
  o.mask_rule = estuary::SourceMaskRule::nearest_unmasked;
  o.neighbors = static_cast<int>(wet);
  EXPECT_NO_THROW(estuary::distance_weights(land, dst, MPI_COMM_SELF, o));
  o.neighbors = static_cast<int>(wet) + 1;
  try {
    estuary::distance_weights(land, dst, MPI_COMM_SELF, o);
    ADD_FAILURE() << "no error for more neighbours than unmasked points";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has only " + std::to_string(wet) + " unmasked points"), std::string::npos)
        << e.what();
  }
}

// ---- configuration size is bounded ----

TEST_F(Inputs, ConfigurationSizeIsBounded) {
  std::string big = "runtime: 1\ncouplings: []\n";
  big += "#" + std::string((std::size_t{16} << 20), 'x') + "\n";
  const std::string p = write("big.yaml", big);
  expect_error([&] { estuary::read_coupling_yaml(p); }, p, "more than the 16777216 estuary reads");
  const std::string n = write("namcouple", big);
  expect_error([&] { estuary::read_namcouple(n); }, "namcouple " + n, "more than the 16777216 estuary reads");
  expect_error([&] { estuary::io::OutputConfig::from_yaml_string(big, "o.yaml"); }, "o.yaml",
               "more than the 16777216 estuary reads");
  // $NFIELDS and the number of fields of a coupling are bounded.
  std::string text = namcouple();
  // ($NFIELDS has at most OASIS's 4 characters: 10001 is refused as too wide, -1 as out of range.)
  text.replace(text.find(" 2\n"), 3, " -1\n");
  const std::string nf = write("nf", text);
  expect_error([&] { estuary::read_namcouple(nf); }, "namcouple " + nf + ":3",
               "the number of $STRINGS entries -1 is outside [0, 10000]");
  std::string many = "[";
  for (int k = 0; k < 1001; ++k) many += (k ? ", F" : "F") + std::to_string(k);
  const std::string mp = write("many.yaml", yaml("{fields: " + many + "], grid: ga}"));
  expect_error([&] { estuary::read_coupling_yaml(mp); }, mp + ":3, key couplings[0].source.fields", "lists 1001 fields, more than the 1000");
}

}  // namespace
