#!/usr/bin/env bash
# Installs estuary from the build tree into a temporary prefix, then builds and runs a small
# external C++ program with find_package(estuary) and a C program with pkg-config, as a model
# would. Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null

mkdir -p "$work/cxx"
cp "$src/tests/install/external.cpp" "$work/cxx/"
cat > "$work/cxx/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(external CXX C)
find_package(estuary REQUIRED)
add_executable(external external.cpp)
target_link_libraries(external PRIVATE estuary::estuary)
CM
cmake -S "$work/cxx" -B "$work/cxx/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cxx/build" >/dev/null
mpirun -n 2 "$work/cxx/build/external"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
libdir=$(pkg-config --variable=libdir estuary)
mpicc -std=c11 -Wall -Wextra "$src/tests/install/external.c" $(pkg-config --cflags --libs estuary) \
  -Wl,-rpath,"$libdir" -o "$work/external_c"
mpirun -n 2 "$work/external_c"
passed=2

# A Fortran program with find_package(estuary) and estuary::estuary_fortran, when estuary was
# built with Fortran. It starts MPI through estuary_init_comp and reads ./namcouple.
if ls "$work"/prefix/lib*/cmake/estuary/estuaryFortranTargets.cmake >/dev/null 2>&1; then
  mkdir -p "$work/fortran"
  cp "$src/tests/test_fortran_install.f90" "$work/fortran/external.f90"
  cat > "$work/fortran/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(external_fortran Fortran C CXX)
find_package(estuary REQUIRED COMPONENTS fortran)
add_executable(external_f external.f90)
target_link_libraries(external_f PRIVATE estuary::estuary_fortran)
CM
  cmake -S "$work/fortran" -B "$work/fortran/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/fortran/build" >/dev/null
  printf ' $NFIELDS\n 1\n $END\n $RUNTIME\n 3600\n $END\n $STRINGS\n%s\n $END\n' \
    "X_OUT X_IN 1 3600 1 rst.nc EXPORTED
20 1 20 1 g g
R 0 R 0
LOCTRANS
INSTANT" > "$work/fortran/namcouple"
  (cd "$work/fortran" && mpirun -n 2 "$work/fortran/build/external_f")
  passed=$((passed + 1))
else
  echo "install test: estuary built without Fortran, no Fortran program"
fi
echo "install test: $passed passed, 0 failed"
