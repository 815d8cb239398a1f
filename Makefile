# estuary — the two commands a user needs are `make demo` and `make test`; each does its own set-up.
BUILD ?= build
JOBS  ?= $(shell nproc)
# OpenMPI as root and with more ranks than cores, so nobody has to set these by hand.
export OMPI_ALLOW_RUN_AS_ROOT = 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = 1
export OMPI_MCA_rmaps_base_oversubscribe = 1
MPIRUN = mpirun --oversubscribe

.PHONY: setup build lib test test-core demo bench bench-sim clean sanitize fuzz wheel

setup:
	@scripts/setup

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DESTUARY_BUILD_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The library alone (and the Fortran module): no tests, examples, benchmarks or Python module; what a
# cluster installation needs (docs/building.md). PREFIX: where `cmake --install build-lib` puts it.
PREFIX ?= /usr/local
lib:
	@cmake -S . -B build-lib -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	  -DESTUARY_BUILD_TESTS=OFF -DESTUARY_BUILD_EXAMPLES=OFF -DESTUARY_BUILD_BENCH=OFF -DESTUARY_PYTHON=OFF >/dev/null
	@cmake --build build-lib -j $(JOBS)

test: build
	cd $(BUILD) && ctest -LE slow --output-on-failure -j 2

# The core alone (MPI only: netCDF, yaml-cpp, PnetCDF, SimGrid, Fortran and Python off) in a
# build folder of its own, with its tests and a check that it includes and links none of them.
test-core:
	JOBS=$(JOBS) scripts/test-core build-core

# The self-contained Python wheel of the build (docs/building.md): $(BUILD)/wheel/estuary-*.whl,
# to pip install anywhere; it holds the module, libestuary and the programs the CLI runs.
wheel: build
	scripts/wheel $(BUILD)

# The coupled toy: atmosphere (reduced Gaussian) and ocean (tripolar) on 2 ranks each; its log,
# restart and timeline files stay in $(BUILD)/demo_run, where `estuary timeline` then prints the
# load balance (LUCIA) and draws timeline_<component>.png and timeline_trace.json (Perfetto).
demo: build
	$(MPIRUN) -n 4 $(BUILD)/examples/toy_atm_ocn $(BUILD)/demo_run
	PYTHONPATH=$(CURDIR)/python python3 -m estuary timeline $(BUILD)/demo_run

bench: build
	scripts/bench $(BUILD)

# Paper 004's figures at full scale on the simulator (about an hour; docs/performance.md).
bench-sim: build
	bench/sim_scale.sh $(BUILD) $(BUILD)/sim_scale

# MPI tests under AddressSanitizer and UBSan, in a build folder of their own. Left out: the install
# test (its external programs are built without the sanitizer runtime on purpose) and the tests
# that import the Python extension, which an uninstrumented interpreter cannot load (the fault
# suite among them: `make test` runs it).
sanitize: setup
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DESTUARY_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest -LE "slow|python" -E "test_install|fault_suite" --output-on-failure -j 2

# libFuzzer targets (fuzz/) under ASan and UBSan, built with clang in build-fuzz, each run on its
# corpus for FUZZ_RUNS executions (FUZZ_ARGS: more libFuzzer flags). A crash leaves its input in
# build-fuzz/findings/<target>/; keep it as a regression test in tests/fuzz_regress/<target>/.
FUZZ_RUNS ?= 100000
FUZZ_ARGS ?=
FUZZ_TARGETS = fuzz_namcouple fuzz_couple_yaml fuzz_output_yaml fuzz_xios_xml fuzz_weights fuzz_ncread fuzz_decomp
fuzz:
	@scripts/setup --fuzz
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DESTUARY_FUZZ=ON -DESTUARY_BUILD_TESTS=OFF -DESTUARY_FORTRAN=OFF -DESTUARY_PYTHON=OFF \
	  -DBUILD_SHARED_LIBS=OFF \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_all
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/findings/$$t; \
	  echo "== $$t ($(FUZZ_RUNS) runs)"; \
	  ASAN_OPTIONS=detect_leaks=1:leak_check_at_exit=0 LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp \
	  build-fuzz/fuzz/$$t -runs=$(FUZZ_RUNS) -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	    -artifact_prefix=build-fuzz/findings/$$t/ -print_final_stats=1 $(FUZZ_ARGS) \
	    build-fuzz/corpus/$$t fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1 \
	    || { tail -n 60 build-fuzz/$$t.log; exit 1; }; \
	  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)" build-fuzz/$$t.log; \
	done

clean:
	rm -rf $(BUILD) build-asan build-core build-fuzz
