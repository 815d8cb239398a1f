// A main for a fuzz target outside libFuzzer: `regress_<target> REGRESS_DIR [CORPUS_DIR...]`
// feeds every file of the folders to LLVMFuzzerTestOneInput. The harness catches
// estuary::Error; anything else (another exception, a crash) ends the program, failing the
// test. Each input of REGRESS_DIR (a crash the fuzzer found, kept) must give an estuary::Error;
// the corpus inputs may also be read without one.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
#include "fuzz_util.hpp"

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::size_t n = 0, failed = 0;
  for (int a = 1; a < argc; ++a) {
    if (!std::filesystem::is_directory(argv[a])) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(argv[a]))
      if (e.is_regular_file()) files.push_back(e.path());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::printf("%s\n", f.c_str());
      std::fflush(stdout);
      const long before = fuzz::errors;
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++n;
      if (a == 1 && fuzz::errors == before) {
        std::printf("FAIL: %s gave no estuary::Error\n", f.c_str());
        ++failed;
      }
    }
  }
  std::printf("%zu inputs, no crash, %zu without the expected error\n", n, failed);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
