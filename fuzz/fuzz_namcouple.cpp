// libFuzzer target: the namcouple reader. Any input gives a CouplingSetup or an estuary::Error;
// anything else (another exception, a crash, a hang, a leak) is a finding.
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "namcouple");
  try {
    estuary::read_namcouple(path);
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
