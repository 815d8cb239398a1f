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
echo "install test: 2 passed, 0 failed"
