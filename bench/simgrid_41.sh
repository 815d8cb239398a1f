#!/usr/bin/env bash
# bench/simgrid_41.sh — builds SimGrid 4.1 from its PyPI source distribution (there is no wheel)
# in a scratch directory and compiles bench/simgrid_probe against it, for the comparison with
# Debian's 3.32 in docs/simulator.md ("SimGrid 4.1 against 3.32"). Not part of `make test`:
# estuary itself builds against 3.32.
#
#   bench/simgrid_41.sh [DIR]        # DIR: /tmp/simgrid-4.1 by default; prints the probe's path
#   DIR/probe --ranks 65536 --mode actorless
#
# A C++-only library: no Python, SMPI, model checker, sthread or Fortran, and without the -g3
# that SimGrid's CMakeLists adds (3.5 CPU-minutes to build on the 2-core machine, 2 minutes wall).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-/tmp/simgrid-4.1}"
mkdir -p "$dir"
cd "$dir"
[ -f simgrid-4.1.tar.gz ] || python3 -m pip download simgrid==4.1 --no-binary :all: --no-deps -d . >&2
[ -d simgrid-4.1 ] || { tar xzf simgrid-4.1.tar.gz; sed -i 's/ -g3")/")/' simgrid-4.1/CMakeLists.txt; }
cmake -S simgrid-4.1 -B build -DCMAKE_BUILD_TYPE=Release -Denable_python=OFF -Denable_smpi=OFF \
  -Denable_model-checking=OFF -Denable_sthread=OFF -Denable_fortran=OFF -Denable_lto=OFF \
  -Denable_debug=OFF -Denable_compile_optimizations=ON >&2
cmake --build build -j "$(nproc)" --target simgrid >&2
c++ -O2 -std=c++17 "$here/bench/simgrid_probe.cpp" -o probe -I build/include -I simgrid-4.1/include \
  -L build/lib -Wl,-rpath,"$dir/build/lib" -lsimgrid
echo "$dir/probe"
