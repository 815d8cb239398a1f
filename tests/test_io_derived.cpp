// Derived fields (`expr:` in the output configuration, src/io/derived.cpp): the values written
// against the same expressions computed here, serially, from global indices — instant records,
// the mean and maximum over steps of an expression, a derived field of a derived field, points
// masked in either input — in serverless and server mode; and the configuration errors, each
// with the file, line and key.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <filesystem>
#include <limits>

#include "test_io_util.hpp"

namespace io = estuary::io;
using etest::all_ok;
using iotest::i64;

namespace {

using iotest::config_error;

std::string out_dir(const std::string& name) { return iotest::out_dir("derived_", name); }

// The model's fields at global index g (level * kNh + point for t3) of step k.
double uo(i64 g, i64 k) { return std::sin(0.3 * static_cast<double>(g) + 0.9 * static_cast<double>(k)) * 2.0; }
double vo(i64 g, i64 k) { return std::cos(0.17 * static_cast<double>(g) - 0.4 * static_cast<double>(k)) - 0.3; }
double t3(i64 g, i64 k) { return 270.0 + 0.1 * static_cast<double>(g) + std::sin(static_cast<double>(k)); }
// Masks of uo and vo (0: masked), on the horizontal point.
bool uo_masked(i64 g) { return g % 5 == 1; }
bool vo_masked(i64 g) { return g % 7 == 2; }

// end_def's error on every rank ("no error" when it passes), for fields uo, vo (2-D, boxes) and
// t3 (3-D) declared as the test's model declares them, plus `extra` (a 2-D field "w", on a
// permuted block: other points than uo's on some rank).
// In server mode the servers' serve() must fail alike (the same check on the catalog), not hang.
std::string end_def_error(const std::string& fields_yaml, bool extra = false, bool server = false) {
  return iotest::end_def_error(out_dir("errors"), fields_yaml, server, [&](io::Output& out, int p, int r) {
    out.def_grid("atm", iotest::grid_part(p, r));
    const auto d2 = iotest::decomp_of("boxes", 1, p, r);
    out.def_field(iotest::field("uo", false, d2));
    out.def_field(iotest::field("vo", false, d2));
    out.def_field(iotest::field("t3", true, iotest::decomp_of("cyclic", iotest::kNlev, p, r)));
    if (extra) out.def_field(iotest::field("w", false, iotest::decomp_of("perm", 1, p, r)));
  });
}

}  // namespace

TEST(IoDerived, ConfigErrorsNameTheLine) {
  const std::string head = "output:\n  files:\n    - name: f\n      output_freq: 1h\n      fields:\n";
  // muParser's message with its position (the '*' is character 5 from 0).
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"uo - * 2\"}\n")
                .find("syntax error in expression 'uo - * 2': Unexpected operator \"*\" found at position 5 "
                      "(positions count from 0) (bad.yaml:6, key output.files[0] (f).fields[0] (x).expr)"),
            std::string::npos)
      << config_error(head + "        - {name: x, expr: \"uo - * 2\"}\n");
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"sqrt(uo\"}\n").find("syntax error in expression 'sqrt(uo'"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"  \"}\n")
                .find("empty expression (bad.yaml:6, key output.files[0] (f).fields[0] (x).expr)"),
            std::string::npos);
  // A block mapping: the line of the expr key itself.
  EXPECT_NE(config_error(head + "        - name: tas\n          units: K\n          expr: tas - 273.15\n")
                .find("derived field 'tas' uses itself (tas -> tas) (bad.yaml:8, key output.files[0] (f).fields[0] "
                      "(tas).expr)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: a, expr: \"b + 1\"}\n        - {name: c, expr: \"uo\"}\n"
                                "        - {name: b, expr: \"2 * a\"}\n")
                .find("derived fields use each other in a cycle (a -> b -> a) (bad.yaml:8"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: s, expr: \"uo + vo\"}\n"
                                "    - name: g\n      output_freq: 2h\n      fields:\n"
                                "        - {name: s, expr: \"uo - vo\"}\n")
                .find("derived field 's' has two expressions, 'uo + vo' (bad.yaml:6, key output.files[0] (f).fields[0] "
                      "(s).expr) and 'uo - vo' (bad.yaml:10, key output.files[1] (g).fields[0] (s).expr)"),
            std::string::npos);
  // Allowed: the same expression twice, a derived field listed without expr in another file,
  // and a derived field of a derived field.
  EXPECT_EQ(config_error(head + "        - {name: s, expr: \"uo + vo\"}\n        - {name: s2, expr: \"s * s\"}\n"
                                "    - name: g\n      output_freq: 2h\n      fields:\n"
                                "        - {name: s, expr: \"uo + vo\", operation: average}\n"
                                "        - {name: s2, operation: average}\n"),
            "no error");
}

// The `@` keys: freq_op and at only with `@` terms, at naming only terms, terms not mixed with
// fields at each step, output_freq whole freq_op periods.
TEST(IoDerived, TemporalTermErrorsNameTheKey) {
  const std::string head = "output:\n  files:\n    - name: f\n      output_freq: 1d\n      fields:\n";
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"uo * 2\", freq_op: 6h}\n")
                .find("freq_op without `@` terms in an expr (bad.yaml:6, key output.files[0] (f).fields[0] (x).freq_op)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"@uo - @vo\", freq_op: 6h, at: {wo: maximum}}\n")
                .find("`at` names 'wo', which is no `@` term of expression '@uo - @vo'"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"@uo - vo\", freq_op: 6h}\n")
                .find("mixes `@` terms (@uo) with field 'vo' at each step"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"@uo\", freq_op: 7h}\n")
                .find("output_freq is not a multiple of freq_op (bad.yaml:6, key output.files[0] (f).fields[0] (x).freq_op)"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"@uo\", at: {uo: once}}\n")
                .find("unknown operation 'once' for a @ term"),
            std::string::npos);
  EXPECT_NE(config_error(head + "        - {name: x, expr: \"u@o\"}\n").find("'u@o' in expression 'u@o' is not a name"),
            std::string::npos);
  EXPECT_NE(config_error("output:\n  derived:\n    - {name: y}\n" + head.substr(8) + "        - y\n")
                .find("a derived field needs a name and an expr (bad.yaml:3, key output.derived[0])"),
            std::string::npos);
}

TEST(IoDerived, EndDefErrorsNameTheExpression) {
  const std::string w = "        - {name: uo}\n";
  std::string m = end_def_error(w + "        - {name: speed, expr: \"sqrt(uo*uo + wo*wo)\"}\n");
  EXPECT_NE(m.find("unknown variable 'wo' in expression 'sqrt(uo*uo + wo*wo)' of derived field 'speed': the model "
                   "declares no field 'wo' (e.yaml:8, key output.files[0] (f).fields[1] (speed).expr)"),
            std::string::npos)
      << m;
  m = end_def_error(w + "        - {name: vo, expr: \"2 * uo\"}\n");
  EXPECT_NE(m.find("derived field 'vo' has the name of a field the model declares (e.yaml:8"), std::string::npos) << m;
  m = end_def_error(w + "        - {name: x, expr: \"uo + t3\"}\n");
  EXPECT_NE(m.find("fields 't3' (grid atm, 3 levels, 288 values) and 'uo' (grid atm, 1 level, 96 values) of derived "
                   "field 'x' differ (e.yaml:8"),
            std::string::npos)
      << m;
  m = end_def_error(w + "        - {name: x, expr: \"_pi * 2\"}\n");
  EXPECT_NE(m.find("expression '_pi * 2' of derived field 'x' uses no field (e.yaml:8"), std::string::npos) << m;
  // w holds other points than uo on every rank (a permuted block against boxes; on one rank,
  // the same points in another order): the same global shape, another decomposition.
  m = end_def_error(w + "        - {name: x, expr: \"uo - w\"}\n", true);
  EXPECT_NE(m.find("fields 'uo' and 'w' of derived field 'x' have different decompositions on rank"), std::string::npos)
      << m;
  EXPECT_NE(m.find("(e.yaml:8, key output.files[0] (f).fields[1] (x).expr)"), std::string::npos) << m;
  EXPECT_EQ(end_def_error(w + "        - {name: x, expr: \"uo - vo\"}\n"), "no error");
  if (etest::world_size() >= 2) {  // server mode: servers and model ranks fail alike
    m = end_def_error(w + "        - {name: speed, expr: \"sqrt(uo*uo + wo*wo)\"}\n", false, true);
    EXPECT_NE(m.find("unknown variable 'wo' in expression 'sqrt(uo*uo + wo*wo)'"), std::string::npos) << m;
    m = end_def_error(w + "        - {name: x, expr: \"uo - w\"}\n", true, true);
    EXPECT_NE(m.find("have different decompositions on rank"), std::string::npos) << m;
  }
}

// Instant values of two expressions and a derived field of a derived one; the average of an
// expression over 3 steps and the maximum of another; points masked in uo or vo masked in the
// result. Both modes; the write order of uo and vo changes from step to step (the derived field
// is evaluated by whichever comes last).
TEST(IoDerived, ValuesMatchSerialReference) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    const std::string tag = mode == io::Mode::server ? "server" : "serverless";
    SCOPED_TRACE(tag);
    const std::string dir = out_dir(tag);
    const std::string yaml =
        "output:\n  mode: " + tag + "\n  writers: " + std::to_string(std::min(2, std::max(1, wp - 1))) +
        "\n  directory: " + dir +
        "\n  files:\n"
        "    - name: inst\n      output_freq: 2h\n      fields:\n"
        "        - {name: speed, expr: \"sqrt(uo*uo + vo*vo)\", precision: double}\n"
        "        - {name: tdeg, expr: \"t3 - 273.15\", units: degC, precision: double}\n"
        "        - {name: ke, expr: \"0.5 * speed^2\", precision: double}\n"
        "        - {name: uo, precision: double}\n"
        "    - name: period\n      output_freq: 3h\n      fields:\n"
        "        - {name: speed, operation: average, precision: double}\n"
        "        - {name: mix, expr: \"uo > 0 ? uo * vo : min(vo, -1)\", operation: maximum, precision: double}\n";
    const io::OutputConfig cfg = io::OutputConfig::from_yaml_string(yaml, "derived.yaml");
    const i64 nsteps = 6;
    double derived_s = 0;
    {
      io::Output out(cfg, MPI_COMM_WORLD);
      if (out.is_server()) {
        out.serve();
      } else {
        int p = 1, r = 0;
        MPI_Comm_size(out.model_comm(), &p);
        MPI_Comm_rank(out.model_comm(), &r);
        const auto d2 = iotest::decomp_of("boxes", 1, p, r);
        const auto d3 = iotest::decomp_of("perm", iotest::kNlev, p, r);
        const auto idx2 = d2.to_indices(), idx3 = d3.to_indices();
        out.def_grid("atm", iotest::grid_part(p, r));
        io::FieldDef fu = iotest::field("uo", false, d2), fv = iotest::field("vo", false, d2);
        for (i64 g : idx2) {
          fu.mask.push_back(uo_masked(g) ? 0 : 1);
          fv.mask.push_back(vo_masked(g) ? 0 : 1);
        }
        out.def_field(fu);
        out.def_field(fv);
        out.def_field(iotest::field("t3", true, d3));
        out.end_def();
        for (i64 k = 1; k <= nsteps; ++k) {
          std::vector<double> u, v, t;
          for (i64 g : idx2) {
            // Garbage at masked points: it must not reach the file nor any operation.
            u.push_back(uo_masked(g) ? std::numeric_limits<double>::quiet_NaN() : uo(g, k));
            v.push_back(vo_masked(g) ? -1e300 : vo(g, k));
          }
          for (i64 g : idx3) t.push_back(t3(g, k));
          const double time = 3600.0 * static_cast<double>(k);
          if (k % 2 == 0) {
            out.write("uo", time, u);
            out.write("vo", time, v);
          } else {
            out.write("vo", time, v);
            out.write("t3", time, t);
            out.write("uo", time, u);
          }
          if (k % 2 == 0) out.write("t3", time, t);
        }
        out.close();
        derived_s = out.stats().derived_s;
      }
    }
    // (The time spent on derived fields is counted: positive on the model ranks.)
    if (etest::world_rank() == 0) {
      EXPECT_GT(derived_s, 0.0);
    }

    io::Reader ri(dir + "/inst.nc", MPI_COMM_WORLD), rp(dir + "/period.nc", MPI_COMM_WORLD);
    ASSERT_EQ(ri.records(), 3);
    ASSERT_EQ(rp.records(), 2);
    const int p = etest::world_size(), r = etest::world_rank();
    int bad = 0;
    // Reads `var` record `rec` into a permuted decomposition; compares with expect(g), which
    // returns NaN where the fill value must be.
    auto check = [&](io::Reader& rd, const std::string& var, i64 rec, i64 nlev, auto expect) {
      const auto d = etest::permuted_block(nlev * iotest::kNh, p, r, 3);
      std::vector<double> got(static_cast<std::size_t>(d.size()));
      rd.read_record(var, rec, d, got);
      const auto idx = d.to_indices();
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const double want = expect(idx[i]);
        const bool ok = std::isnan(want) ? got[i] == io::kFillValue
                                         : std::abs(got[i] - want) <= 1e-14 * std::max(1.0, std::abs(want));
        if (!ok && bad < 5) ADD_FAILURE() << var << " record " << rec << " point " << idx[i] << ": " << got[i] << " != " << want;
        bad += ok ? 0 : 1;
      }
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto masked = [](i64 g) { return uo_masked(g) || vo_masked(g); };
    auto speed = [&](i64 g, i64 k) { return masked(g) ? nan : std::sqrt(uo(g, k) * uo(g, k) + vo(g, k) * vo(g, k)); };
    auto mix = [&](i64 g, i64 k) { return masked(g) ? nan : uo(g, k) > 0 ? uo(g, k) * vo(g, k) : std::min(vo(g, k), -1.0); };
    for (i64 rec = 0; rec < 3; ++rec) {
      const i64 k = 2 * (rec + 1);
      check(ri, "speed", rec, 1, [&](i64 g) { return speed(g, k); });
      check(ri, "ke", rec, 1, [&](i64 g) { return 0.5 * speed(g, k) * speed(g, k); });
      check(ri, "tdeg", rec, iotest::kNlev, [&](i64 g) { return t3(g, k) - 273.15; });
      check(ri, "uo", rec, 1, [&](i64 g) { return uo_masked(g) ? nan : uo(g, k); });
    }
    for (i64 rec = 0; rec < 2; ++rec) {
      check(rp, "speed", rec, 1, [&](i64 g) {
        double sum = 0;
        for (i64 k = 3 * rec + 1; k <= 3 * rec + 3; ++k) sum += speed(g, k);
        return sum / 3;
      });
      check(rp, "mix", rec, 1, [&](i64 g) {
        double mx = -std::numeric_limits<double>::infinity();
        for (i64 k = 3 * rec + 1; k <= 3 * rec + 3; ++k) mx = std::max(mx, mix(g, k));
        return mx;
      });
    }
    EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << r;
  }
}

// The model may not write a derived field itself.
TEST(IoDerived, WritingADerivedFieldIsRefused) {
  const std::string yaml = "output:\n  directory: " + out_dir("refuse") +
                           "\n  files:\n    - {name: f, output_freq: 1h, fields: [{name: x, expr: \"2 * uo\"}]}\n";
  io::Output out(io::OutputConfig::from_yaml_string(yaml, "r.yaml"), MPI_COMM_WORLD);
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d2 = iotest::decomp_of("block", 1, p, r);
  out.def_grid("atm", iotest::grid_part(p, r));
  out.def_field(iotest::field("uo", false, d2));
  out.end_def();
  std::string msg;
  try {
    out.write("x", 3600.0, std::vector<double>(static_cast<std::size_t>(d2.size()), 1.0));
  } catch (const estuary::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("write of a derived field"), std::string::npos) << msg;
  out.close();
}

// An input written every other step: the derived field exists only at the steps where every
// input has been written with the same time (never from a stale value of the other input).
TEST(IoDerived, EvaluatedOnlyAtStepsWithEveryInput) {
  const std::string dir = out_dir("sparse");
  const std::string yaml = "output:\n  directory: " + dir +
                           "\n  files:\n    - {name: s, output_freq: 1h, fields: [{name: sum, expr: \"uo + 10 * vo\", "
                           "precision: double}]}\n";
  {
    io::Output out(io::OutputConfig::from_yaml_string(yaml, "s.yaml"), MPI_COMM_WORLD);
    const int p = etest::world_size(), r = etest::world_rank();
    const auto d2 = iotest::decomp_of("cyclic", 1, p, r);
    const auto idx = d2.to_indices();
    out.def_grid("atm", iotest::grid_part(p, r));
    out.def_field(iotest::field("uo", false, d2));
    out.def_field(iotest::field("vo", false, d2));
    out.end_def();
    for (i64 k = 1; k <= 6; ++k) {
      std::vector<double> u, v;
      for (i64 g : idx) {
        u.push_back(uo(g, k));
        v.push_back(vo(g, k));
      }
      if (k % 2 == 0) out.write("vo", 3600.0 * static_cast<double>(k), v);
      out.write("uo", 3600.0 * static_cast<double>(k), u);
    }
    out.close();
  }
  io::Reader rd(dir + "/s.nc", MPI_COMM_WORLD);
  ASSERT_EQ(rd.records(), 3);
  EXPECT_EQ(rd.times(), (std::vector<double>{7200.0, 14400.0, 21600.0}));
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d = etest::permuted_block(iotest::kNh, p, r, 9);
  const auto idx = d.to_indices();
  int bad = 0;
  for (i64 rec = 0; rec < 3; ++rec) {
    std::vector<double> got(idx.size());
    rd.read_record("sum", rec, d, got);
    const i64 k = 2 * (rec + 1);
    for (std::size_t i = 0; i < idx.size(); ++i) {
      const double want = uo(idx[i], k) + 10 * vo(idx[i], k);
      bad += std::abs(got[i] - want) <= 1e-14 * std::max(1.0, std::abs(want)) ? 0 : 1;
    }
  }
  EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << r;
}

// Masked points are not evaluated: 1 / vo where the model leaves 0 on land raises no division
// by zero (a model that traps floating-point exceptions would stop there), and the land is the
// fill value in the file.
TEST(IoDerived, MaskedPointsAreNotEvaluated) {
  const std::string dir = out_dir("fpe");
  const std::string yaml = "output:\n  directory: " + dir +
                           "\n  files:\n    - {name: q, output_freq: 1h, fields: [{name: inv, expr: \"1 / vo\", "
                           "precision: double}]}\n";
  bool raised = false;
  {
    io::Output out(io::OutputConfig::from_yaml_string(yaml, "q.yaml"), MPI_COMM_WORLD);
    const int p = etest::world_size(), r = etest::world_rank();
    const auto d2 = iotest::decomp_of("block", 1, p, r);
    out.def_grid("atm", iotest::grid_part(p, r));
    io::FieldDef fv = iotest::field("vo", false, d2);
    std::vector<double> v;
    for (i64 g : d2.to_indices()) {
      fv.mask.push_back(vo_masked(g) ? 0 : 1);
      v.push_back(vo_masked(g) ? 0.0 : 2.0 + vo(g, 1));  // 2 + cos(...) - 0.3 > 0 at sea
    }
    out.def_field(fv);
    out.end_def();
    std::feclearexcept(FE_DIVBYZERO);
    out.write("vo", 3600.0, v);
    raised = std::fetestexcept(FE_DIVBYZERO) != 0;
    out.close();
  }
  EXPECT_TRUE(all_ok(!raised)) << "a masked point was evaluated on rank " << etest::world_rank();
  io::Reader rd(dir + "/q.nc", MPI_COMM_WORLD);
  const int p = etest::world_size(), r = etest::world_rank();
  const auto d = etest::permuted_block(iotest::kNh, p, r, 4);
  const auto idx = d.to_indices();
  std::vector<double> got(idx.size());
  rd.read_record("inv", 0, d, got);
  int bad = 0;
  for (std::size_t i = 0; i < idx.size(); ++i)
    bad += got[i] == (vo_masked(idx[i]) ? io::kFillValue : 1.0 / (2.0 + vo(idx[i], 1))) ? 0 : 1;
  EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << r;
}

// Temporal operations inside expressions (`@` terms, XIOS's semantics) over calendar periods:
// a noleap January and February of 6-hourly writes, in serverless and server mode.
//   range (monthly file, averaged): the month's mean of each day's (max uo - min uo);
//   cov (monthly file, instant, freq_op 1mo): the month's mean of uo*vo (a derived field of the
//     `derived:` list) minus the product of the month's means — 124 and 112 samples;
//   masked points (uo's or vo's mask) are the fill value, whatever the model leaves there.
TEST(IoDerived, TemporalTermsOverCalendarMonths) {
  const int wp = etest::world_size();
  for (io::Mode mode : {io::Mode::serverless, io::Mode::server}) {
    if (mode == io::Mode::server && wp < 2) continue;
    const std::string tag = mode == io::Mode::server ? "server" : "serverless";
    SCOPED_TRACE(tag);
    const std::string dir = out_dir("at_" + tag);
    const std::string yaml =
        "output:\n  mode: " + tag + "\n  directory: " + dir +
        "\n  calendar: noleap\n  reference_time: 2001-01-01\n"
        "  derived:\n    - {name: uv, expr: \"uo * vo\"}\n"
        "  files:\n"
        "    - name: range\n      output_freq: 1mo\n      fields:\n"
        "        - {name: range, expr: \"@umax - @umin\", freq_op: 1d, operation: average, precision: double,\n"
        "           at: {umax: {field: uo, operation: maximum}, umin: {field: uo, operation: minimum}}}\n"
        "    - name: cov\n      output_freq: 1mo\n      fields:\n"
        "        - {name: cov, expr: \"@uv - @uo * @vo\", freq_op: 1mo, precision: double}\n";
    const io::OutputConfig cfg = io::OutputConfig::from_yaml_string(yaml, "at.yaml");
    const i64 nsteps = 4 * (31 + 28);
    iotest::run_output(cfg, [&](io::Output& out, int p, int r) {
      const auto d2 = iotest::decomp_of("boxes", 1, p, r);
      const auto idx = d2.to_indices();
      out.def_grid("atm", iotest::grid_part(p, r));
      io::FieldDef fu = iotest::field("uo", false, d2), fv = iotest::field("vo", false, d2);
      for (i64 g : idx) {
        fu.mask.push_back(uo_masked(g) ? 0 : 1);
        fv.mask.push_back(vo_masked(g) ? 0 : 1);
      }
      out.def_field(fu);
      out.def_field(fv);
      out.end_def();
      for (i64 k = 1; k <= nsteps; ++k) {
        std::vector<double> u, v;
        for (i64 g : idx) {
          u.push_back(uo_masked(g) ? std::numeric_limits<double>::quiet_NaN() : uo(g, k));
          v.push_back(vo_masked(g) ? -1e300 : vo(g, k));
        }
        out.write("vo", 21600.0 * static_cast<double>(k), v);
        out.write("uo", 21600.0 * static_cast<double>(k), u);
      }
      out.close();
    });
    io::Reader rr(dir + "/range.nc", MPI_COMM_WORLD), rc(dir + "/cov.nc", MPI_COMM_WORLD);
    ASSERT_EQ(rr.records(), 2);
    ASSERT_EQ(rc.records(), 2);
    const int p = etest::world_size(), r = etest::world_rank();
    const auto d = etest::permuted_block(iotest::kNh, p, r, 5);
    const auto idx = d.to_indices();
    std::vector<double> range(idx.size()), cov(idx.size());
    const i64 first_day[] = {0, 31}, days[] = {31, 28};
    int bad = 0;
    for (i64 m = 0; m < 2; ++m) {
      rr.read_record("range", m, d, range);
      rc.read_record("cov", m, d, cov);
      for (std::size_t i = 0; i < idx.size(); ++i) {
        const i64 g = idx[i];
        if (uo_masked(g) || vo_masked(g)) {
          if (uo_masked(g) && range[i] != io::kFillValue) ++bad;
          if (cov[i] != io::kFillValue) ++bad;
          continue;
        }
        double sum_range = 0;
        for (i64 day = first_day[m]; day < first_day[m] + days[m]; ++day) {
          double mx = -std::numeric_limits<double>::infinity(), mn = std::numeric_limits<double>::infinity();
          for (i64 k = 4 * day + 1; k <= 4 * day + 4; ++k) {
            mx = std::max(mx, uo(g, k));
            mn = std::min(mn, uo(g, k));
          }
          sum_range += mx - mn;
        }
        const double want_range = sum_range / static_cast<double>(days[m]);
        double su = 0, sv = 0, suv = 0;
        const i64 n = 4 * days[m];
        for (i64 k = 4 * first_day[m] + 1; k <= 4 * first_day[m] + n; ++k) {
          su += uo(g, k);
          sv += vo(g, k);
          suv += uo(g, k) * vo(g, k);
        }
        const double nn = static_cast<double>(n), want_cov = suv / nn - (su / nn) * (sv / nn);
        if (std::abs(range[i] - want_range) > 1e-13 * std::max(1.0, std::abs(want_range))) ++bad;
        if (std::abs(cov[i] - want_cov) > 1e-13) ++bad;
      }
    }
    EXPECT_TRUE(all_ok(bad == 0)) << bad << " values differ on rank " << r;
    // The records are the calendar months' ends (an instant file): 31 and 59 days.
    if (r == 0) {
      EXPECT_EQ(rc.times(), (std::vector<double>{31 * 86400.0, 59 * 86400.0}));
    }
  }
}
