# estuary — the two commands a user needs are `make demo` and `make test`; each does its own set-up.
BUILD ?= build
JOBS  ?= $(shell nproc)
# OpenMPI as root and with more ranks than cores, so nobody has to set these by hand.
export OMPI_ALLOW_RUN_AS_ROOT = 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = 1
export OMPI_MCA_rmaps_base_oversubscribe = 1
MPIRUN = mpirun --oversubscribe

.PHONY: setup build test test-core demo bench bench-sim clean sanitize

setup:
	@scripts/setup

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DESTUARY_BUILD_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest -LE slow --output-on-failure -j 2

# The core alone (MPI only: netCDF, yaml-cpp, PnetCDF, SimGrid, Fortran and Python off) in a
# build folder of its own, with its tests and a check that it includes and links none of them.
test-core:
	JOBS=$(JOBS) scripts/test-core build-core

# The coupled toy: atmosphere (reduced Gaussian) and ocean (tripolar) on 2 ranks each; its log
# and restart files stay in $(BUILD)/demo_run.
demo: build
	$(MPIRUN) -n 4 $(BUILD)/examples/toy_atm_ocn $(BUILD)/demo_run

bench: build
	scripts/bench $(BUILD)

# Paper 004's figures at full scale on the simulator (about an hour; docs/performance.md).
bench-sim: build
	bench/sim_scale.sh $(BUILD) $(BUILD)/sim_scale

# MPI tests under AddressSanitizer and UBSan, in a build folder of their own. The install test is
# left out: its external programs are built without the sanitizer runtime on purpose.
sanitize: setup
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DESTUARY_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest -LE slow -E test_install --output-on-failure

clean:
	rm -rf $(BUILD) build-asan build-core
