// XIOS XML (OutputConfig::from_xios_xml): NEMO's own iodef.xml and the files it includes
// (tests/data/xios, see its README), errors and warnings that name the file, the line, the
// element and the attribute, and a day of output written from a set-up read from XML: the
// renamed variables, one record per output period, the values of each period's operation
// computed here. (python/tests/test_io_xios.py compares the NEMO set-up with an independent
// reading of the XML by Python's xml.etree and checks the files' CF attributes.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "test_io_util.hpp"

namespace io = estuary::io;
using iotest::i64;

namespace {

const std::string kData = ESTUARY_XIOS_DATA_DIR;

std::string tmp_dir(const std::string& name) {
  const std::string d =
      std::string(ESTUARY_IO_TEST_DIR) + "/xios/np" + std::to_string(etest::world_size()) + "/" + name;
  if (etest::world_rank() == 0) std::filesystem::create_directories(d);
  MPI_Barrier(MPI_COMM_WORLD);
  return d;
}

// Writes `text` to DIR/NAME on rank 0 (every rank reads it after the barrier).
std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = dir + "/" + name;
  if (etest::world_rank() == 0) std::ofstream(p) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return p;
}

std::string error_of(const std::string& path, const io::XiosXmlOptions& opt = {}) {
  try {
    io::XiosXmlInfo info;
    io::OutputConfig::from_xios_xml(path, opt, &info);
  } catch (const estuary::Error& e) {
    return e.what();
  }
  return "no error";
}

const io::FieldConfig* find_var(const io::FileConfig& f, const std::string& var) {
  for (const auto& x : f.fields)
    if (x.variable() == var) return &x;
  return nullptr;
}

// A context with a field definition (groups passing attributes down, a field_ref chain) and
// a file definition with renamed fields; %FILE% and %FIELD% are filled in by the tests.
const std::string kFieldDef =
    R"(<field_definition level="1" prec="4" operation="average" enabled=".TRUE." default_value="1.e20">
  <field_group id="grid_T" grid_ref="grid_T_2D">
    <field id="sst" long_name="Bulk sea surface temperature" standard_name="sea_surface_temperature" unit="degC"/>
    <field id="sstmax" long_name="max of sst" field_ref="sst" operation="maximum"/>
    <field id="toce" long_name="temperature" unit="degC" grid_ref="grid_T_3D" prec="8" compression_level="3"/>
    <field id="sst2" unit="degC2"> sst * sst </field>
    <field id="sstmin" field_ref="sst" operation="minimum"/>
    <field id="off" enabled="false"/>
    <field id="deep" level="7"/>
  </field_group>
</field_definition>
)";

std::string context(const std::string& files) {
  return "<?xml version=\"1.0\"?>\n<simulation>\n <context id=\"xios\"><variable_definition>"
         "<variable id=\"using_server\" type=\"bool\">true</variable></variable_definition></context>\n"
         " <context id=\"nemo\">\n  <variable_definition><variable id=\"rho0\" type=\"float\"> 1026.0 </variable>"
         "</variable_definition>\n  <field_definition src=\"./field_def.xml\"/>\n"
         "  <file_definition type=\"one_file\" name=\"@expname@_@freq@\" sync_freq=\"1d\">\n" +
         files + "  </file_definition>\n </context>\n</simulation>\n";
}

}  // namespace

TEST(IoXios, NemoOrca2FilesRead) {
  io::XiosXmlOptions opt;
  opt.skip_unsupported = true;  // NEMO's file_def has expressions and zonal-mean grids
  opt.substitutions = {{"expname", "ORCA2"}, {"startdate", "20000101"}, {"enddate", "20000105"}};
  io::XiosXmlInfo info;
  const io::OutputConfig c = io::OutputConfig::from_xios_xml(kData + "/iodef.xml", opt, &info);
  EXPECT_EQ(info.context, "nemo");
  EXPECT_EQ(info.variables.at("rho0"), "1026.0");  // the context's <variable>s, trimmed
  // The 5d group's five files, named by NEMO's template with @freq@ from output_freq; the
  // monthly zonal means (file16, file17) change grids, so with skip_unsupported they are left out.
  std::vector<std::string> names;
  for (const auto& f : c.files) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ORCA2_5d_20000101_20000105_grid_T", "ORCA2_5d_20000101_20000105_grid_U",
                                             "ORCA2_5d_20000101_20000105_grid_V", "ORCA2_5d_20000101_20000105_grid_W",
                                             "ORCA2_5d_20000101_20000105_scalar", "ORCA2_5d_20000101_20000105_icemod",
                                             "ORCA2_5d_20000101_20000105_SBC_scalar"}));
  for (const auto& f : c.files) {
    EXPECT_EQ(f.output_freq.seconds, 5 * 86400.0) << f.name;
    EXPECT_EQ(f.format, io::Format::netcdf4) << f.name;
  }
  // <field field_ref="sst" name="tos"/>: data from the model's sst, written as tos, with the
  // definition's operation (field_definition's average) and precision (prec 4).
  const io::FieldConfig* tos = find_var(c.files[0], "tos");
  ASSERT_NE(tos, nullptr);
  EXPECT_EQ(tos->name, "sst");
  EXPECT_EQ(tos->operation, io::Operation::average);
  EXPECT_EQ(tos->precision, io::Precision::f32);
  EXPECT_EQ(tos->units, "degC");
  EXPECT_EQ(tos->long_name, "Bulk sea surface temperature");
  // The expressions of file11, XIOS's `@` temporal operations inside them included: thetao =
  // @toce_e3t / @e3t is the 5-day mean of toce * e3t (field_def's expression toce_e3t, a derived
  // field of its own) over the 5-day mean of e3t; instant at output_freq = freq_op, so one value
  // a period, written on the file's averaged time axis.
  const io::FieldConfig* thetao = find_var(c.files[0], "thetao");
  ASSERT_NE(thetao, nullptr);
  EXPECT_EQ(thetao->expr, "@toce_e3t / @e3t");
  EXPECT_EQ(thetao->freq_op.seconds, 5 * 86400.0);
  EXPECT_EQ(thetao->operation, io::Operation::average);
  EXPECT_EQ(thetao->at.at("toce_e3t"), (io::FieldConfig::AtTerm{"toce_e3t", io::Operation::average}));
  EXPECT_EQ(thetao->at.at("e3t"), (io::FieldConfig::AtTerm{"e3t", io::Operation::average}));
  EXPECT_EQ(thetao->units, "degC");  // from field_ref="toce"
  auto derived = [&](const std::string& name) -> const io::FieldConfig* {
    for (const auto& d : c.derived)
      if (d.name == name) return &d;
    return nullptr;
  };
  ASSERT_NE(derived("toce_e3t"), nullptr);
  EXPECT_EQ(derived("toce_e3t")->expr, "toce * e3t");
  EXPECT_TRUE(derived("toce_e3t")->at.empty());
  // sstdcy = @sstmax - @sstmin, daily, averaged over the 5 days: sstmax is field_ref="sst" with
  // operation="maximum", so the term is sst's daily maximum.
  const io::FieldConfig* dcy = find_var(c.files[0], "sstdcy");
  ASSERT_NE(dcy, nullptr);
  EXPECT_EQ(dcy->freq_op.seconds, 86400.0);
  EXPECT_EQ(dcy->operation, io::Operation::average);
  EXPECT_EQ(dcy->at.at("sstmax"), (io::FieldConfig::AtTerm{"sst", io::Operation::maximum}));
  EXPECT_EQ(dcy->at.at("sstmin"), (io::FieldConfig::AtTerm{"sst", io::Operation::minimum}));
  const io::FieldConfig* sd = find_var(c.files[0], "tosstd");
  ASSERT_NE(sd, nullptr);
  EXPECT_EQ(sd->expr, "sqrt( @sst2 - @sst * @sst )");
  ASSERT_NE(derived("sst2"), nullptr);
  EXPECT_EQ(derived("sst2")->expr, "sst * sst");
  bool warned = false;
  for (const auto& w : info.warnings)
    if (w.find("file_def_nemo-oce.xml:14, <file id=\"file11\">") != std::string::npos &&
        w.find("instant field 'thetao'") != std::string::npos)
      warned = true;
  EXPECT_TRUE(warned);
  // NEMO's sea-ice temperatures average only where there is ice (detect_missing_value): estuary
  // would average the fill values in, so they are left out, named where the field_def says so.
  const io::FieldConfig* sitemp = find_var(c.files[5], "sitemp");
  EXPECT_EQ(sitemp, nullptr);
  ASSERT_NE(find_var(c.files[5], "siconc"), nullptr);
  EXPECT_EQ(find_var(c.files[5], "siconc")->name, "iceconc");
  bool dmv = false;
  for (const auto& w : info.warnings)
    if (w.find("field_def_nemo-ice.xml:42, <field id=\"icetemp\">, attribute detect_missing_value") !=
        std::string::npos)
      dmv = true;
  EXPECT_TRUE(dmv);
  // The same files without skip_unsupported: the first zonal mean (a grid transformation) is the error.
  opt.skip_unsupported = false;
  const std::string e = error_of(kData + "/iodef.xml", opt);
  EXPECT_NE(e.find("(an XIOS grid transformation) is not supported"), std::string::npos) << e;
  EXPECT_NE(e.find("file_def_nemo-oce.xml:113, <field field_ref=\"sophtove\">"), std::string::npos) << e;
}

TEST(IoXios, ErrorsNameFileLineElementAttribute) {
  const std::string d = tmp_dir("errors");
  write_file(d, "field_def.xml", kFieldDef);
  io::XiosXmlOptions opt;
  opt.substitutions = {{"expname", "x"}};
  auto file = [&](const std::string& name, const std::string& fields) {
    return write_file(d, name, context("   <file id=\"f\" output_freq=\"6h\">\n" + fields + "   </file>\n"));
  };
  // Line 9 of each file below is the first field of the file (context() puts the file on line 8).
  EXPECT_NE(error_of(file("a.xml", "    <field field_ref=\"sst\" add_offset=\"2\"/>\n"), opt)
                .find("packed values (add_offset) are not written by estuary (" + d +
                      "/a.xml:9, <field field_ref=\"sst\">, attribute add_offset)"),
            std::string::npos);
  EXPECT_NE(error_of(file("b.xml", "    <field field_ref=\"sst\" colour=\"red\"/>\n"), opt)
                .find("unknown attribute of <field> (" + d + "/b.xml:9, <field field_ref=\"sst\">, attribute colour)"),
            std::string::npos);
  EXPECT_NE(
      error_of(file("c.xml", "    <field field_ref=\"sst\"/>\n    <field field_ref=\"sss\" name=\"sos\"/>\n"), opt)
          .find("no field 'sss' in the field definition (" + d +
                "/c.xml:10, <field field_ref=\"sss\">, attribute field_ref)"),
      std::string::npos);
  // Expressions: a name that is no field, a syntax error, `@` terms mixed with fields at each
  // step, `this` without field_ref; each named at its element.
  EXPECT_NE(error_of(file("e.xml", "    <field field_ref=\"sst\" name=\"sq\">@sss + 1</field>\n"), opt)
                .find("names 'sss', which is no field of the field definition (" + d +
                      "/e.xml:9, <field field_ref=\"sst\">)"),
            std::string::npos);
  EXPECT_NE(error_of(file("e1.xml", "    <field field_ref=\"sst\" name=\"sq\">sst * </field>\n"), opt)
                .find("syntax error in expression 'sst *'"),
            std::string::npos);
  EXPECT_NE(error_of(file("e2.xml", "    <field field_ref=\"sst\" name=\"sq\" freq_op=\"1h\">@sst2 - sst</field>\n"),
                     opt)
                .find("mixes `@` terms (@sst2) with field 'sst' at each step (" + d + "/e2.xml:9"),
            std::string::npos);
  EXPECT_NE(error_of(file("e3.xml", "    <field id=\"q\">this * 2</field>\n"), opt)
                .find("`this` in an expression of a field without field_ref (" + d + "/e3.xml:9, <field id=\"q\">)"),
            std::string::npos);
  EXPECT_NE(error_of(file("g.xml", "    <field field_ref=\"sst\" grid_ref=\"grid_zonal\"/>\n"), opt)
                .find("grid transformation) is not supported (" + d +
                      "/g.xml:9, <field field_ref=\"sst\">, attribute grid_ref)"),
            std::string::npos);
  EXPECT_NE(
      error_of(file("o.xml", "    <field field_ref=\"sst\" freq_offset=\"1d\"/>\n"), opt).find("attribute freq_offset"),
      std::string::npos);
  EXPECT_NE(error_of(file("mo.xml", "    <field field_ref=\"sst\" freq_op=\"1mo\"/>\n"), opt)
                .find("freq_op in months is supported only as output_freq of an instant field (" + d +
                      "/mo.xml:9, <field field_ref=\"sst\">, attribute freq_op)"),
            std::string::npos);
  EXPECT_NE(error_of(file("p.xml", "    <field field_ref=\"sst\" prec=\"2\"/>\n"), opt).find("prec 2 (integers)"),
            std::string::npos);
  EXPECT_NE(error_of(file("t.xml", "    <field field_ref=\"sst\" freq_op=\"2ts\"/>\n"), opt)
                .find("counts model time steps and no time step is given (" + d +
                      "/t.xml:9, <field field_ref=\"sst\">, attribute freq_op)"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          file("m.xml",
               "    <field field_ref=\"sst\" operation=\"instant\"/>\n    <field field_ref=\"sstmax\" name=\"mx\"/>\n"),
          opt)
          .find("file mixes instant fields"),
      std::string::npos);
  EXPECT_NE(error_of(file("n.xml",
                          "    <field field_ref=\"sst\" name=\"a\"/>\n    <field field_ref=\"sstmax\" name=\"a\"/>\n"),
                     opt)
                .find("variable 'a' is written twice to file x_6h (" + d + "/n.xml:10"),
            std::string::npos);
  // File name templates without a value; a context that is not there.
  EXPECT_NE(
      error_of(file("s.xml", "    <field field_ref=\"sst\"/>\n"), {}).find("file name template @expname@ has no value"),
      std::string::npos);
  io::XiosXmlOptions other = opt;
  other.context = "atmos";
  EXPECT_NE(error_of(file("s2.xml", "    <field field_ref=\"sst\"/>\n"), other)
                .find("no context 'atmos' (there are: xios, nemo)"),
            std::string::npos);
  // A missing src= file is named with the element that includes it.
  write_file(d, "inc.xml",
             "<simulation><context id=\"nemo\">\n<field_definition src=\"./nowhere.xml\"/></context></simulation>\n");
  EXPECT_NE(error_of(d + "/inc.xml", opt)
                .find("cannot open '" + d + "/nowhere.xml' (" + d + "/inc.xml:2, <field_definition>, attribute src)"),
            std::string::npos);
  // An include cycle (g.xml includes itself) and groups nested without end are errors, not a hang.
  write_file(d, "g.xml", "<field_group id=\"g\">\n <field_group src=\"./g.xml\"/>\n</field_group>\n");
  write_file(d, "cyc.xml",
             "<simulation><context id=\"nemo\">\n<field_definition><field_group src=\"./g.xml\"/>"
             "</field_definition></context></simulation>\n");
  EXPECT_NE(error_of(d + "/cyc.xml", opt)
                .find("'" + d + "/g.xml' includes itself (" + d + "/g.xml:2, <field_group>, attribute src)"),
            std::string::npos)
      << error_of(d + "/cyc.xml", opt);
  std::string deep = "<simulation><context id=\"nemo\"><field_definition>\n";
  for (int i = 0; i < 150; ++i) deep += "<field_group>";
  for (int i = 0; i < 150; ++i) deep += "</field_group>";
  write_file(d, "deep.xml", deep + "</field_definition></context></simulation>\n");
  EXPECT_NE(error_of(d + "/deep.xml", opt)
                .find("elements nested deeper than 100 levels (" + d + "/deep.xml:2, <field_group>)"),
            std::string::npos)
      << error_of(d + "/deep.xml", opt);
  // XML syntax errors name the line.
  write_file(d, "syntax.xml", "<simulation>\n<context id=\"nemo\">\n<field_definition>\n</simulation>\n");
  EXPECT_NE(error_of(d + "/syntax.xml", opt).find("XML: "), std::string::npos);
  EXPECT_NE(error_of(d + "/syntax.xml", opt).find(d + "/syntax.xml:4"), std::string::npos);
}

TEST(IoXios, InheritanceEnabledLevelAndWarnings) {
  const std::string d = tmp_dir("inherit");
  write_file(d, "field_def.xml", kFieldDef);
  const std::string p =
      write_file(d, "iodef.xml",
                 context("   <file_group id=\"1d\" output_freq=\"1d\" output_level=\"5\" compression_level=\"2\">\n"
                         "    <file id=\"f\" name_suffix=\"_T\" description=\"T grid\" split_freq=\"2d\">\n"
                         "     <field field_ref=\"sstmax\" name=\"tosmax\"/>\n"
                         "     <field field_ref=\"sst\" name=\"tos\" freq_op=\"1h\" compression_level=\"4\"/>\n"
                         "     <field field_ref=\"toce\" name=\"thetao\" long_name=\"sea water temperature\"/>\n"
                         "     <field field_ref=\"off\"/>\n"
                         "     <field field_ref=\"deep\"/>\n"
                         "     <field field_ref=\"sst\" name=\"tos_on\" enabled=\"false\"/>\n"
                         "    </file>\n"
                         "    <file id=\"g\" enabled=\".FALSE.\"><field field_ref=\"sst\"/></file>\n"
                         "   </file_group>\n"));
  io::XiosXmlOptions opt;
  opt.substitutions = {{"expname", "run"}};
  io::XiosXmlInfo info;
  const io::OutputConfig c = io::OutputConfig::from_xios_xml(p, opt, &info);
  ASSERT_EQ(c.files.size(), 1u);  // g is disabled
  const io::FileConfig& f = c.files[0];
  EXPECT_EQ(f.name, "run_1d_T");
  EXPECT_EQ(f.output_freq.seconds, 86400.0);
  EXPECT_EQ(f.split_freq.seconds, 2 * 86400.0);
  // off is disabled, deep's level 7 is above output_level 5, tos_on is disabled in the file.
  ASSERT_EQ(f.fields.size(), 3u);
  const io::FieldConfig& mx = f.fields[0];
  EXPECT_EQ(mx.name, "sst");  // sstmax takes its data from sst
  EXPECT_EQ(mx.output_name, "tosmax");
  EXPECT_EQ(mx.operation, io::Operation::maximum);
  EXPECT_EQ(mx.long_name, "max of sst");
  EXPECT_EQ(mx.units, "degC");  // from sst, through the reference
  EXPECT_EQ(mx.deflate, 2);     // the file group's compression_level
  EXPECT_EQ(f.fields[1].sampling_freq_s, 3600.0);
  EXPECT_EQ(f.fields[1].deflate, 4);
  EXPECT_EQ(f.fields[2].precision, io::Precision::f64);
  EXPECT_EQ(f.fields[2].long_name, "sea water temperature");
  EXPECT_EQ(f.fields[2].deflate, 3);  // the definition's compression_level over the file group's
  ASSERT_EQ(info.fields.size(), 3u);
  EXPECT_EQ(info.fields[2].grid_ref, "grid_T_3D");
  EXPECT_EQ(info.fields[0].grid_ref, "grid_T_2D");
  // description is metadata estuary does not write: a warning naming its line, not an error.
  bool warned = false;
  for (const auto& w : info.warnings)
    if (w.find(d + "/iodef.xml:9, <file id=\"f\">, attribute description") != std::string::npos) warned = true;
  EXPECT_TRUE(warned);
  // A duration in time steps with the model's time step given: the time step is every write.
  const std::string q =
      write_file(d, "ts.xml",
                 context("   <file id=\"f\" output_freq=\"4ts\"><field field_ref=\"sst\" freq_op=\"1ts\"/>"
                         "<field field_ref=\"sstmax\" name=\"mx\" freq_op=\"2ts\"/></file>\n"));
  opt.timestep_s = 900;
  const io::OutputConfig t = io::OutputConfig::from_xios_xml(q, opt, &info);
  EXPECT_EQ(t.files[0].name, "run_4ts");
  EXPECT_EQ(t.files[0].output_freq.seconds, 3600.0);
  EXPECT_EQ(t.files[0].fields[0].sampling_freq_s, 0.0);
  EXPECT_EQ(t.files[0].fields[1].sampling_freq_s, 1800.0);
  // Without a name, the variable is named after the chain's root, the model's field (XIOS's
  // rule): <field field_ref="sstmax"/> writes sst's maximum as "sst".
  const std::string u = write_file(
      d, "noname.xml", context("   <file id=\"f\" output_freq=\"1d\"><field field_ref=\"sstmax\"/></file>\n"));
  const io::OutputConfig n = io::OutputConfig::from_xios_xml(u, opt, &info);
  EXPECT_EQ(n.files[0].fields[0].variable(), "sst");
  EXPECT_EQ(n.files[0].fields[0].operation, io::Operation::maximum);
  // XIOS 1's calendar on the context, XIOS 2's <calendar>: calendar and reference time.
  const std::string v1 =
      write_file(d, "cal1.xml",
                 "<simulation><context id=\"test\" calendar_type=\"NoLeap\" start_date=\"2012-03-01 15:00:00\">\n"
                 "<field_definition operation=\"average\"><field id=\"a\"/></field_definition>\n"
                 "<file_definition><file id=\"o\" output_freq=\"6h\"><field field_ref=\"a\"/></file></file_definition>"
                 "</context></simulation>\n");
  const io::OutputConfig c1 = io::OutputConfig::from_xios_xml(v1, opt, &info);
  EXPECT_EQ(c1.calendar, "noleap");
  EXPECT_EQ(c1.reference_time, "2012-03-01 15:00:00");
  EXPECT_EQ(info.context, "test");  // the only context
  const std::string v2 =
      write_file(d, "cal2.xml",
                 "<context id=\"test\"><calendar type=\"D360\" start_date=\"1990-01-01 00:00:00\"/>\n"
                 "<field_definition operation=\"average\"><field id=\"a\"/></field_definition>\n"
                 "<file_definition><file id=\"o\" output_freq=\"6h\"><field field_ref=\"a\"/></file></file_definition>"
                 "</context>\n");
  const io::OutputConfig c2 = io::OutputConfig::from_xios_xml(v2, opt, &info);
  EXPECT_EQ(c2.calendar, "360_day");
  EXPECT_EQ(c2.reference_time, "1990-01-01 00:00:00");
  write_file(d, "cal3.xml", "<context id=\"test\">\n<calendar type=\"Martian\"/></context>\n");
  EXPECT_NE(error_of(d + "/cal3.xml")
                .find("calendar 'Martian' is not supported (" + d + "/cal3.xml:2, <calendar>, attribute type)"),
            std::string::npos);
}

// What real files from XIOS's test cases and NEMO configurations showed (a public sweep):
// - a file's <field id="X"> with X in the field_definition is that field (XIOS has one object
//   per id): its unit, grid and operation come from the definition, its own attributes override;
// - an expression term on another grid (NEMO's `@ttrd_qns_e3t / @e3ts`, e3ts a surface extract
//   of e3t) is an error naming both fields, and with skip_unsupported a warning that leaves the
//   one field out;
// - detect_missing_value on an instant field changes nothing: accepted; on an average refused;
// - a substitution for @freq@ is refused (each file's own output_freq);
// - a model field on a grid whose <scalar> is a reduction is refused (XIOS would reduce it);
// - <context id="xios"> (XIOS's settings) is not a candidate when no context is named.
TEST(IoXios, PublicFilesIdFieldsExpressionsAndContexts) {
  const std::string kExprWords = "a grid transformation inside an expression is not supported";
  const std::string d = tmp_dir("public");
  const std::string defs =
      "<field_definition operation=\"average\">\n"
      " <field id=\"e3t\" grid_ref=\"grid_T_3D\"/>\n"
      " <field id=\"e3ts\" field_ref=\"e3t\" grid_ref=\"grid_T_SFC\"/>\n"
      " <field id=\"qns_e3t\" grid_ref=\"grid_T_SFC\"/>\n"
      " <field id=\"sst\" unit=\"degC\" long_name=\"sea surface temperature\" operation=\"instant\" prec=\"8\" grid_ref=\"grid_T_2D\"/>\n"
      " <field id=\"zmin\" grid_ref=\"zmin_grid\"/>\n"
      "</field_definition>\n"
      "<grid_definition>\n"
      " <grid id=\"zmin_grid\"><scalar id=\"zmin_s\"><reduce_axis operation=\"min\"/></scalar></grid>\n"
      "</grid_definition>\n";
  const auto ctx = [&](const std::string& files, const std::string& model = "ocean") {
    return "<simulation>\n <context id=\"xios\"><variable_definition><variable id=\"info_level\" type=\"int\">10"
           "</variable></variable_definition></context>\n <context id=\"" + model + "\">\n" + defs +
           "<file_definition>\n" + files + "</file_definition>\n </context>\n</simulation>\n";
  };
  io::XiosXmlOptions opt;
  io::XiosXmlInfo info;
  // A file's field by the definition's id; the xios context passed over.
  const std::string p1 = write_file(d, "id.xml", ctx("<file id=\"o\" output_freq=\"1d\"><field id=\"sst\" long_name=\"SST\"/></file>\n"));
  const io::OutputConfig c1 = io::OutputConfig::from_xios_xml(p1, opt, &info);
  EXPECT_EQ(info.context, "ocean");
  ASSERT_EQ(c1.files.size(), 1u);
  ASSERT_EQ(c1.files[0].fields.size(), 1u);
  const io::FieldConfig& sst = c1.files[0].fields[0];
  EXPECT_EQ(sst.name, "sst");
  EXPECT_EQ(sst.operation, io::Operation::instant);  // the definition's, not missing
  EXPECT_EQ(sst.units, "degC");
  EXPECT_EQ(sst.long_name, "SST");  // the file's own attribute over the definition's
  EXPECT_EQ(sst.precision, io::Precision::f64);
  ASSERT_EQ(info.fields.size(), 1u);
  EXPECT_EQ(info.fields[0].grid_ref, "grid_T_2D");
  // An expression with a term on another grid: an error naming both fields, or the field left out.
  const std::string p2 = write_file(
      d, "expr.xml",
      ctx("<file id=\"o\" output_freq=\"1d\"><field id=\"ratio\" name=\"ratio\" grid_ref=\"grid_T_SFC\"> @qns_e3t / @e3ts </field>"
          "<field field_ref=\"sst\"/></file>\n"));
  const std::string e2 = error_of(p2);
  EXPECT_NE(e2.find("'e3ts' in expression '@qns_e3t / @e3ts' is on grid_ref=grid_T_SFC (" + d + "/expr.xml:6, <field id=\"e3ts\">) "
                    "but refers to field 'e3t' on grid_ref=grid_T_3D (" + d + "/expr.xml:5, <field id=\"e3t\">)"),
            std::string::npos) << e2;
  io::XiosXmlOptions skip;
  skip.skip_unsupported = true;
  const io::OutputConfig c2 = io::OutputConfig::from_xios_xml(p2, skip, &info);
  ASSERT_EQ(c2.files.size(), 1u);
  ASSERT_EQ(c2.files[0].fields.size(), 1u);  // ratio left out, sst kept
  EXPECT_EQ(c2.files[0].fields[0].name, "sst");
  // With every field left out, the error says why (the warnings would be lost with it).
  const std::string p2b = write_file(
      d, "expr_only.xml", ctx("<file id=\"o\" output_freq=\"1d\"><field id=\"ratio\" grid_ref=\"grid_T_SFC\"> @qns_e3t / @e3ts </field></file>\n"));
  const std::string e2b = error_of(p2b, skip);
  EXPECT_NE(e2b.find("no file to write in context 'ocean' (1 field(s) left out as not supported, e.g. "), std::string::npos) << e2b;
  EXPECT_NE(e2b.find(kExprWords), std::string::npos) << e2b;
  // detect_missing_value: instant accepted, average refused.
  const std::string p3 = write_file(d, "dmv.xml", ctx("<file id=\"o\" output_freq=\"1d\"><field field_ref=\"sst\" detect_missing_value=\"true\"/></file>\n"));
  EXPECT_EQ(io::OutputConfig::from_xios_xml(p3, opt, &info).files[0].fields.size(), 1u);
  const std::string p4 = write_file(d, "dmv_avg.xml",
                                    ctx("<file id=\"o\" output_freq=\"1d\"><field field_ref=\"sst\" operation=\"average\" detect_missing_value=\"true\"/></file>\n"));
  EXPECT_NE(error_of(p4).find("detect_missing_value is not supported"), std::string::npos) << error_of(p4);
  // @freq@ given a value.
  const std::string p5 = write_file(d, "freq.xml", ctx("<file name=\"x_@freq@\" output_freq=\"1d\"><field field_ref=\"sst\"/></file>\n"));
  io::XiosXmlOptions sub;
  sub.substitutions = {{"freq", "1mo"}};
  EXPECT_NE(error_of(p5, sub).find("@freq@ is each file's own output_freq"), std::string::npos) << error_of(p5, sub);
  EXPECT_EQ(io::OutputConfig::from_xios_xml(p5, opt, &info).files[0].name, "x_1d");
  // A model field on a reduced scalar.
  const std::string p6 = write_file(d, "scalar.xml", ctx("<file id=\"o\" output_freq=\"1d\"><field field_ref=\"zmin\"/></file>\n"));
  EXPECT_NE(error_of(p6).find("the field's own grid is transformed (" + d + "/scalar.xml:12, <reduce_axis>)"), std::string::npos)
      << error_of(p6);
}

// One day of a small NEMO-like model: hourly writes of sst (2-D) and toce (3 levels) from
// decompositions that differ by rank count, files from XML; each record is checked against the
// period's average / maximum / instant value computed here from global indices.
TEST(IoXios, WritesOneDayFromXml) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::string d = tmp_dir("write");
  write_file(d, "field_def.xml", kFieldDef);
  const std::string path = write_file(d, "iodef.xml",
                                      context("   <file_group id=\"6h\" output_freq=\"6h\">\n"
                                              "    <file id=\"t\" name_suffix=\"_grid_T\">\n"
                                              "     <field field_ref=\"sst\" name=\"tos\"/>\n"
                                              "     <field field_ref=\"sstmax\" name=\"tosmax\"/>\n"
                                              "     <field field_ref=\"toce\" name=\"thetao\"/>\n"
                                              "    </file>\n"
                                              "   </file_group>\n"
                                              "   <file id=\"i\" output_freq=\"1d\" name=\"inst\"><field "
                                              "field_ref=\"sst\" operation=\"instant\"/></file>\n"));
  io::XiosXmlOptions opt;
  opt.substitutions = {{"expname", "nemo"}};
  io::XiosXmlInfo info;
  io::OutputConfig c = io::OutputConfig::from_xios_xml(path, opt, &info);
  c.directory = d + "/out";
  ASSERT_EQ(c.files.size(), 2u);
  ASSERT_EQ(c.files[0].name, "nemo_6h_grid_T");
  const estuary::Decomp d2 = iotest::decomp_of("perm", 1, p, r);
  const estuary::Decomp d3 = iotest::decomp_of("boxes", iotest::kNlev, p, r);
  {
    io::Output out(c, MPI_COMM_WORLD);
    out.def_grid("atm", iotest::grid_part(p, r));
    out.def_field(iotest::field("sst", false, d2));
    out.def_field(iotest::field("toce", true, d3));
    out.end_def();
    for (i64 step = 1; step <= 24; ++step) {
      const double t = 3600.0 * static_cast<double>(step);
      out.write("sst", t, iotest::values(d2, step, false));
      out.write("toce", t, iotest::values(d3, step, true));
    }
    out.close();
  }
  io::Reader rd(d + "/out/nemo_6h_grid_T.nc", MPI_COMM_WORLD);
  EXPECT_EQ(rd.records(), 4);  // 6-hourly over one day
  // Read back into other decompositions than written.
  const estuary::Decomp r2 = iotest::decomp_of("cyclic", 1, p, r);
  const estuary::Decomp r3 = iotest::decomp_of("block", iotest::kNlev, p, r);
  std::vector<double> got2(static_cast<std::size_t>(r2.size())), got3(static_cast<std::size_t>(r3.size()));
  int bad = 0;
  for (i64 rec = 0; rec < 4; ++rec) {
    rd.read_record("tos", rec, r2, got2);
    const auto i2 = r2.to_indices();
    for (std::size_t k = 0; k < i2.size(); ++k) {  // the mean of steps 6 rec + 1 .. 6 rec + 6, as float
      double sum = 0;
      for (i64 s = 6 * rec + 1; s <= 6 * rec + 6; ++s) sum += iotest::value2(i2[k], s);
      if (got2[k] != static_cast<double>(static_cast<float>(sum / 6))) ++bad;
    }
    rd.read_record("tosmax", rec, r2, got2);
    for (std::size_t k = 0; k < i2.size(); ++k) {
      double mx = -std::numeric_limits<double>::infinity();
      for (i64 s = 6 * rec + 1; s <= 6 * rec + 6; ++s) mx = std::max(mx, iotest::value2(i2[k], s));
      if (got2[k] != static_cast<double>(static_cast<float>(mx))) ++bad;
    }
    rd.read_record("thetao", rec, r3, got3);  // prec="8": double
    const auto i3 = r3.to_indices();
    for (std::size_t k = 0; k < i3.size(); ++k) {
      double sum = 0;
      for (i64 s = 6 * rec + 1; s <= 6 * rec + 6; ++s) sum += iotest::value3(i3[k], s);
      if (got3[k] != sum / 6) ++bad;
    }
  }
  EXPECT_TRUE(etest::all_ok(bad == 0)) << bad << " values differ on rank " << r;
  // The model's names are not in the file: only the renamed variables are.
  bool threw = false;
  try {
    rd.read_record("sst", 0, r2, got2);
  } catch (const estuary::Error&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  io::Reader inst(d + "/out/inst.nc", MPI_COMM_WORLD);
  EXPECT_EQ(inst.records(), 1);
  inst.read_record("sst", 0, r2, got2);
  bad = 0;
  const auto i2 = r2.to_indices();
  for (std::size_t k = 0; k < i2.size(); ++k)
    if (got2[k] != static_cast<double>(static_cast<float>(iotest::value2(i2[k], 24)))) ++bad;
  EXPECT_TRUE(etest::all_ok(bad == 0));
}

// XIOS expressions as XIOS computes them, two days of hourly writes: `@x` is x's own operation
// (field_def's) over each freq_op period, the expression is evaluated on those at each period's
// end, and the field's operation then applies to the values so made; plain expressions and
// `this` at every step. Every value against a serial computation here from the model's values.
TEST(IoXios, TemporalExpressionsAsXiosComputesThem) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::string d = tmp_dir("expr");
  write_file(d, "field_def.xml", kFieldDef);
  const std::string path = write_file(
      d, "iodef.xml",
      context("   <file id=\"e\" output_freq=\"1d\" name=\"expr\">\n"
              "    <field field_ref=\"sst\" name=\"sstdcy\" operation=\"average\" freq_op=\"6h\"> @sstmax - @sstmin </field>\n"
              "    <field field_ref=\"sst\" name=\"tosstd\" operation=\"instant\" freq_op=\"1d\" prec=\"8\"> sqrt( @sst2 - @sst * @sst ) </field>\n"
              "    <field field_ref=\"sst2\" name=\"sq\" prec=\"8\"/>\n"
              "    <field field_ref=\"sst\" name=\"twice\" prec=\"8\"> this * 2 </field>\n"
              "   </file>\n"));
  io::XiosXmlOptions opt;
  opt.substitutions = {{"expname", "x"}};
  io::OutputConfig c = io::OutputConfig::from_xios_xml(path, opt);
  c.directory = d + "/out";
  const estuary::Decomp d2 = iotest::decomp_of("perm", 1, p, r);
  {
    io::Output out(c, MPI_COMM_WORLD);
    out.def_grid("atm", iotest::grid_part(p, r));
    out.def_field(iotest::field("sst", false, d2));
    out.end_def();
    for (i64 step = 1; step <= 48; ++step) out.write("sst", 3600.0 * static_cast<double>(step), iotest::values(d2, step, false));
    out.close();
  }
  io::Reader rd(d + "/out/expr.nc", MPI_COMM_WORLD);
  ASSERT_EQ(rd.records(), 2);
  const estuary::Decomp r2 = iotest::decomp_of("block", 1, p, r);
  const auto idx = r2.to_indices();
  std::vector<double> dcy(idx.size()), sd(idx.size()), sq(idx.size()), tw(idx.size());
  int bad = 0;
  for (i64 rec = 0; rec < 2; ++rec) {
    rd.read_record("sstdcy", rec, r2, dcy);
    rd.read_record("tosstd", rec, r2, sd);
    rd.read_record("sq", rec, r2, sq);
    rd.read_record("twice", rec, r2, tw);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      // sstdcy: the day's mean of the four 6-hourly (maximum - minimum).
      double range_sum = 0;
      for (i64 q = 0; q < 4; ++q) {
        double mx = -std::numeric_limits<double>::infinity(), mn = std::numeric_limits<double>::infinity();
        for (i64 s = 24 * rec + 6 * q + 1; s <= 24 * rec + 6 * q + 6; ++s) {
          mx = std::max(mx, iotest::value2(idx[k], s));
          mn = std::min(mn, iotest::value2(idx[k], s));
        }
        range_sum += mx - mn;
      }
      if (dcy[k] != static_cast<double>(static_cast<float>(range_sum / 4))) ++bad;
      // tosstd: sqrt(daily mean of sst^2 - (daily mean of sst)^2); sq: the daily mean of sst^2;
      // twice: the daily mean of 2 sst.
      double s1 = 0, s2 = 0, s3 = 0;
      for (i64 s = 24 * rec + 1; s <= 24 * rec + 24; ++s) {
        const double v = iotest::value2(idx[k], s);
        s1 += v;
        s2 += v * v;
        s3 += v * 2;
      }
      const double m1 = s1 / 24, m2 = s2 / 24;
      if (std::abs(sd[k] - std::sqrt(m2 - m1 * m1)) > 1e-9 * std::abs(m2)) ++bad;
      if (sq[k] != m2) ++bad;
      if (tw[k] != s3 / 24) ++bad;
    }
  }
  EXPECT_TRUE(etest::all_ok(bad == 0)) << bad << " values differ on rank " << r;
}

// The YAML's output_name, as XIOS's name: one model field written as two variables.
TEST(IoOutputName, YamlWritesOneFieldUnderTwoNames) {
  const int p = etest::world_size(), r = etest::world_rank();
  const std::string d = tmp_dir("yaml_output_name");
  const std::string yaml = "output:\n  directory: " + d +
                           "\n  files:\n    - name: day\n      output_freq: 6h\n      fields:\n"
                           "        - {name: sst, output_name: tos, operation: average, precision: double}\n"
                           "        - {name: sst, output_name: tosmax, operation: maximum, precision: double}\n";
  const io::OutputConfig c = io::OutputConfig::from_yaml_string(yaml, "o.yaml");
  ASSERT_EQ(c.files[0].fields[1].variable(), "tosmax");
  const estuary::Decomp d2 = iotest::decomp_of("perm", 1, p, r);
  {
    io::Output out(c, MPI_COMM_WORLD);
    out.def_grid("atm", iotest::grid_part(p, r));
    out.def_field(iotest::field("sst", false, d2));
    out.end_def();
    for (i64 step = 1; step <= 12; ++step)
      out.write("sst", 3600.0 * static_cast<double>(step), iotest::values(d2, step, false));
    out.close();
  }
  io::Reader rd(d + "/day.nc", MPI_COMM_WORLD);
  EXPECT_EQ(rd.records(), 2);
  const estuary::Decomp r2 = iotest::decomp_of("block", 1, p, r);
  const auto idx = r2.to_indices();
  std::vector<double> avg(idx.size()), mx(idx.size());
  int bad = 0;
  for (i64 rec = 0; rec < 2; ++rec) {
    rd.read_record("tos", rec, r2, avg);
    rd.read_record("tosmax", rec, r2, mx);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      double sum = 0, m = -std::numeric_limits<double>::infinity();
      for (i64 s = 6 * rec + 1; s <= 6 * rec + 6; ++s) {
        sum += iotest::value2(idx[k], s);
        m = std::max(m, iotest::value2(idx[k], s));
      }
      if (avg[k] != sum / 6 || mx[k] != m) ++bad;
    }
  }
  EXPECT_TRUE(etest::all_ok(bad == 0));
  // Two variables of one name in a file: the second is named.
  try {
    io::OutputConfig::from_yaml_string(
        "output:\n  files:\n    - name: f\n      output_freq: 6h\n      fields:\n"
        "        - {name: sst, output_name: tos}\n        - {name: tos}\n",
        "o.yaml");
    ADD_FAILURE() << "no error";
  } catch (const estuary::Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "field listed twice (variable 'tos') (o.yaml:7, key output.files[0] (f).fields[1] (tos))"),
              std::string::npos)
        << e.what();
  }
}
