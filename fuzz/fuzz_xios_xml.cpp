// libFuzzer target: the XIOS XML reader (iodef.xml), from a file; its src= includes name files
// next to it, so an input that includes itself meets the cycle check.
#include "estuary/error.hpp"
#include "estuary/io.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "iodef.xml");
  estuary::io::XiosXmlOptions opt;
  opt.timestep_s = 900;
  opt.substitutions = {{"expname", "fuzz"}, {"startdate", "20000101"}, {"enddate", "20000102"}};
  for (bool skip : {false, true}) {
    opt.skip_unsupported = skip;
    try {
      estuary::io::XiosXmlInfo info;
      estuary::io::OutputConfig::from_xios_xml(path, opt, &info);
    } catch (const estuary::Error&) {
      if (!skip) ++fuzz::errors;  // one count an input, as the regression test expects
    }
  }
  return 0;
}
