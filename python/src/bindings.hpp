// What the translation units of the _estuary module share: the communicator caster, the array
// types and their conversions, and the functions each unit registers its part of the module
// with (module.cpp calls them in order). Split by concept, as the C++ library is: module.cpp
// (NB_MODULE, errors), decomp.cpp, redist.cpp, remap.cpp (weight files, Remap), weightgen.cpp
// (Grid, GridGen, weight generators), couple.cpp (Component, partitions, info codes),
// couple_config.cpp (read_coupling_config), grid_files.cpp (OASIS and SCRIP grid files), io.cpp
// (the I/O server). Bindings convert and release the GIL; parsing, checks and recipes belong to
// the core (estuary/names.hpp's from_name, Grid::check, GridGen::from_name ...).
//
// Communicators: Python passes mpi4py communicators (or None for MPI.COMM_WORLD, or a Fortran
// handle as an int). The caster below converts with comm.py2f() and MPI_Comm_f2c, and back with
// MPI_Comm_c2f and MPI.Comm.f2py. We do not use mpi4py's C API (mpi4py/mpi4py.h,
// PyMPIComm_Get): its binary wheels may be built for another MPI ABI than the one estuary links,
// while a Fortran handle is an int that means the same thing to both sides.
//
// Arrays: float64 arrays, C- or Fortran-contiguous (the memory order is the local order of the
// partition or decomposition; a (nx, ny) Fortran array of a box partition has x fastest, as
// OASIS wants). Inputs may be converted (a copy); outputs must already be contiguous float64
// (no conversion: the results would land in a temporary), else TypeError. Redist.run takes
// both arrays as they are (its overloads for float64, float32, int32, int64 pick by dtype).
#pragma once

#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "estuary/error.hpp"
#include "estuary/names.hpp"
#include "estuary/schedule.hpp"
#include "estuary/weights.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using i64 = std::int64_t;

// An MPI communicator as Python sees it (an mpi4py communicator).
struct PyComm {
  MPI_Comm comm = MPI_COMM_WORLD;
};

namespace nanobind::detail {
template <>
struct type_caster<PyComm> {
  // In: any communicator (or None, or a Fortran handle); out: always an Intracomm (from_cpp).
  NB_TYPE_CASTER(PyComm, io_name("mpi4py.MPI.Comm", "mpi4py.MPI.Intracomm"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (src.is_none()) {
      value.comm = MPI_COMM_WORLD;
      return true;
    }
    PyObject* f = nullptr;
    if (PyLong_Check(src.ptr())) {
      f = src.ptr();
      Py_INCREF(f);
    } else if (PyObject_HasAttrString(src.ptr(), "py2f")) {
      f = PyObject_CallMethod(src.ptr(), "py2f", nullptr);
    }
    if (!f) {
      PyErr_Clear();
      return false;
    }
    const long h = PyLong_AsLong(f);
    Py_DECREF(f);
    if (h == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.comm = MPI_Comm_f2c(static_cast<MPI_Fint>(h));
    return true;
  }

  static handle from_cpp(const PyComm& c, rv_policy, cleanup_list*) noexcept {
    PyObject* mod = PyImport_ImportModule("mpi4py.MPI");
    if (!mod) return handle();
    PyObject* cls = PyObject_GetAttrString(mod, "Intracomm");
    PyObject* comm = nullptr;
    if (cls) {
      PyObject* base = PyObject_CallMethod(cls, "f2py", "i", static_cast<int>(MPI_Comm_c2f(c.comm)));
      // Intracomm(comm) makes the intracommunicator class of the same handle (no duplicate).
      if (base) comm = PyObject_CallOneArg(cls, base);
      Py_XDECREF(base);
    }
    Py_XDECREF(cls);
    Py_DECREF(mod);
    return comm;
  }
};
}  // namespace nanobind::detail

namespace estuary::py {

// Float64 arrays, C or Fortran order; the memory order is the local order.
using InArray = nb::ndarray<const double, nb::any_contig, nb::device::cpu>;
using OutArray = nb::ndarray<double, nb::any_contig, nb::device::cpu>;
using IdxArray = nb::ndarray<const i64, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using MaskArray = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

inline std::span<const double> span_of(const InArray& a) { return {a.data(), a.size()}; }
inline std::span<double> span_of(const OutArray& a) { return {a.data(), a.size()}; }

// A numpy array that owns a vector (moved, no copy).
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

inline std::vector<i64> vec_of(const IdxArray& a) { return {a.data(), a.data() + a.size()}; }

// A name read into an enum by the core (estuary::from_name), the error naming the Python call.
template <class E>
E named(std::string_view name, const std::string& where) {
  try {
    return estuary::from_name<E>(name);
  } catch (const estuary::Error& e) {
    throw estuary::Error(e.fault(), where, e.fix());
  }
}

// Results with their element types, so that the stubs say them (stubgen writes a plain nb::dict
// or nb::tuple as a bare dict or tuple, which mypy --strict refuses): a dict of names to values,
// a list of such dicts, and links as three 1-D numpy arrays.
using PyDict = nb::typed<nb::dict, nb::str, nb::any>;
using PyDictList = nb::typed<nb::list, PyDict>;
template <class T>
using NumpyVec = nb::ndarray<nb::numpy, T, nb::ndim<1>>;
using PyLinks = std::tuple<NumpyVec<i64>, NumpyVec<i64>, NumpyVec<double>>;

// Links <-> (rows, cols, weights) numpy arrays.
PyLinks links_to_py(estuary::Links&& l);
estuary::Links links_from(const IdxArray& rows, const IdxArray& cols, const InArray& w);

// A rank's schedule counts as a dict (Redist.schedule_stats, Component.schedules).
PyDict schedule_stats_dict(const estuary::ScheduleStats& s);

// The parts of the module, registered by module.cpp in this order (a later part may add
// methods to a class of an earlier one: grid_files to Component).
void bind_decomp(nb::module_& m);
void bind_redist(nb::module_& m);
void bind_remap(nb::module_& m);
void bind_weightgen(nb::module_& m);
void bind_couple(nb::module_& m);
void bind_grid_files(nb::module_& m);
void bind_couple_config(nb::module_& m);
void bind_io(nb::module_& m, nb::handle error);

}  // namespace estuary::py
