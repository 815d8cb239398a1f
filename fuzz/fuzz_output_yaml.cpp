// libFuzzer target: the output (I/O server) YAML reader, from a string and from a file.
#include "estuary/error.hpp"
#include "estuary/io.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  fuzz::init_mpi(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    estuary::io::OutputConfig::from_yaml_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const estuary::Error&) {
    ++fuzz::errors;
  }
  return 0;
}
