// libFuzzer target: the coupling YAML reader (and read_coupling_config's format sniffing).
#include "estuary/couple_config.hpp"
#include "estuary/error.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input(data, size, "couple.yaml");
  try {
    estuary::read_coupling_yaml(path);
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
