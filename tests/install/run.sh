#!/usr/bin/env bash
# Installs estuary from the build tree into a temporary prefix, then builds and runs small
# external programs against it as a model would: C, C++ and Fortran, each once with
# find_package(estuary) in a CMake project that enables only its own language (a pure C or a
# pure Fortran project must find estuary), and once with pkg-config and the MPI compiler
# wrappers. Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
passed=0

# cmake_project NAME LANGUAGE SOURCE TARGET [COMPONENTS...]: a one-language CMake project.
cmake_project() {
  local name=$1 lang=$2 source=$3 target=$4
  shift 4
  local components=""
  [ $# -gt 0 ] && components="COMPONENTS $*"
  mkdir -p "$work/$name"
  cp "$source" "$work/$name/"
  cat > "$work/$name/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project($name $lang)
find_package(estuary REQUIRED $components)
add_executable($name $(basename "$source"))
target_link_libraries($name PRIVATE $target)
CM
  if ! cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/$name.log" 2>&1 ||
     ! cmake --build "$work/$name/build" >>"$work/$name.log" 2>&1; then
    cat "$work/$name.log"
    echo "install test: the $lang project $name (find_package) does not build"
    exit 1
  fi
}

# C++ with find_package: the example project of examples/external_project, as a user copies it.
cp -r "$src/examples/external_project" "$work/ext_cxx"
if ! cmake -S "$work/ext_cxx" -B "$work/ext_cxx/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/ext_cxx.log" 2>&1 ||
   ! cmake --build "$work/ext_cxx/build" >>"$work/ext_cxx.log" 2>&1; then
  cat "$work/ext_cxx.log"
  echo "install test: examples/external_project does not build against the installed estuary"
  exit 1
fi
mpirun -n 2 "$work/ext_cxx/build/redist_example"
# C with find_package: a C-only project.
cmake_project ext_c C "$src/tests/install/external.c" estuary::estuary
mpirun -n 2 "$work/ext_c/build/ext_c"
passed=$((passed + 2))

# C and C++ with pkg-config.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
libdir=$(pkg-config --variable=libdir estuary)
mpicc -std=c11 -Wall -Wextra "$src/tests/install/external.c" $(pkg-config --cflags --libs estuary) \
  -Wl,-rpath,"$libdir" -o "$work/external_c_pc"
mpirun -n 2 "$work/external_c_pc"
# OMPI_SKIP_MPICXX: not OpenMPI's deprecated C++ bindings, whose header warns under -Wextra.
mpicxx -std=c++20 -Wall -Wextra -DOMPI_SKIP_MPICXX "$src/examples/external_project/main.cpp" $(pkg-config --cflags --libs estuary) \
  -Wl,-rpath,"$libdir" -o "$work/external_cxx_pc"
mpirun -n 2 "$work/external_cxx_pc"
passed=$((passed + 2))

# Fortran, when estuary was built with it: a Fortran-only project with find_package(estuary
# COMPONENTS fortran) and estuary::estuary_fortran, and mpif90 with pkg-config estuary-fortran.
# The program starts MPI through estuary_init_comp and reads ./namcouple.
if ls "$work"/prefix/lib*/cmake/estuary/estuaryFortranTargets.cmake >/dev/null 2>&1; then
  cp "$src/tests/test_fortran_install.f90" "$work/external.f90"
  cmake_project ext_f Fortran "$work/external.f90" estuary::estuary_fortran fortran
  mkdir -p "$work/run_f"
  printf ' $NFIELDS\n 1\n $END\n $RUNTIME\n 3600\n $END\n $STRINGS\n%s\n $END\n' \
    "X_OUT X_IN 1 3600 1 rst.nc EXPORTED
20 1 20 1 g g
R 0 R 0
LOCTRANS
INSTANT" > "$work/run_f/namcouple"
  (cd "$work/run_f" && mpirun -n 2 "$work/ext_f/build/ext_f")
  mpif90 -Wall "$work/external.f90" $(pkg-config --cflags --libs estuary-fortran) -Wl,-rpath,"$libdir" \
    -o "$work/external_f_pc"
  rm -f "$work/run_f/rst.nc"
  (cd "$work/run_f" && mpirun -n 2 "$work/external_f_pc")
  passed=$((passed + 2))
else
  echo "install test: estuary built without Fortran, no Fortran program"
fi
echo "install test: $passed passed, 0 failed"
