// _estuary: the low-level Python module over estuary's C++ API (python/estuary/ is the Python
// layer users import). This file holds NB_MODULE and the error types; each concept registers
// its part from its own file (bindings.hpp lists them).
//
// Why nanobind rather than pybind11: it is several times smaller (module size and compile
// time), its calls are faster, and nb::ndarray hands numpy arrays to C++ as pointer + shape
// without copies (checked dtype, contiguity and writability), which is what put/get and the
// redistribution need. pybind11's py::array_t can do the last too, but with more machinery.
//
// Errors: estuary::Error becomes estuary.Error (a RuntimeError) carrying estuary's message;
// estuary::MpiError becomes estuary.MpiError, a subclass.
#include <cstring>
#include <exception>

#include "bindings.hpp"

using namespace estuary::py;

NB_MODULE(_estuary, m) {
  m.doc() = "estuary's C++ API (low level; import estuary instead)";
  // MPI is initialised by mpi4py (estuary never calls MPI_Init itself).
  nb::module_::import_("mpi4py.MPI");

  auto error = nb::exception<estuary::Error>(m, "Error", PyExc_RuntimeError);
  auto mpi_error = nb::exception<estuary::MpiError>(m, "MpiError", error.ptr());
  // Tried before the two above (nanobind tries the latest first): a message with bytes that are
  // not UTF-8 (a file name, a value quoted from a file) still becomes estuary.Error, its bad
  // bytes shown as \xNN, where PyErr_SetString would raise UnicodeDecodeError instead.
  static PyObject* error_types[2] = {error.ptr(), mpi_error.ptr()};
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        auto* types = static_cast<PyObject**>(payload);
        const auto raise = [](PyObject* type, const char* what) {
          PyObject* msg = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
          if (!msg) return;  // the decoding error is then the one raised
          PyErr_SetObject(type, msg);
          Py_DECREF(msg);
        };
        try {
          std::rethrow_exception(p);
        } catch (const estuary::MpiError& e) {
          raise(types[1], e.what());
        } catch (const estuary::Error& e) {
          raise(types[0], e.what());
        }
      },
      error_types);
  error.attr("__doc__") =
      "What estuary raises on a failure (a RuntimeError): the message says what went wrong, where (the "
      "file and line, the field, the rank) and how to fix it, and every rank of the collective concerned "
      "raises it alike.";
  mpi_error.attr("__doc__") =
      "An MPI call failed (an estuary.Error): the message names the MPI routine and its error string.";

  bind_decomp(m);
  bind_redist(m);
  bind_remap(m);
  bind_weightgen(m);
  bind_couple(m);
  bind_grid_files(m);
  bind_couple_config(m);
  bind_io(m, error);
}
