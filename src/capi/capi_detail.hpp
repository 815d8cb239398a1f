// Internals of the C API (src/capi): the handle of a decomposition and the helpers every
// est_* function uses (error mapping, argument checks), shared by the core part (estuary_c.cpp:
// decompositions, redistribution), the coupler part (estuary_c_couple.cpp) and the I/O part
// (estuary_c_io.cpp), which are built only with the library parts they wrap.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "estuary.h"
#include "estuary/decomp.hpp"
#include "estuary/error.hpp"

struct est_decomp_s {
  estuary::Decomp decomp;
};

namespace estuary::capi {

inline thread_local std::string last_error;

// Records the message of a failure in `fn`; drops the "estuary: " prefix of estuary::Error, as
// the function name already says where the message comes from.
inline void record(const char* fn, const char* what) noexcept {
  try {
    std::string text = what ? what : "";
    if (text.rfind("estuary: ", 0) == 0) text.erase(0, 9);
    last_error = std::string(fn) + ": " + text;
  } catch (...) {
    last_error.clear();  // out of memory while composing the message: leave it empty
  }
}

// Runs `body` and maps what it throws: estuary::Error to `error_code` (the part that failed),
// std::invalid_argument to EST_ERR_ARGUMENT, anything else to EST_ERR_INTERNAL.
template <class F>
int guarded(const char* fn, int error_code, F&& body) noexcept {
  try {
    body();
    return EST_OK;
  } catch (const estuary::MpiError& e) {
    record(fn, e.what());
    return EST_ERR_MPI;
  } catch (const estuary::Error& e) {
    record(fn, e.what());
    return error_code;
  } catch (const std::invalid_argument& e) {
    record(fn, e.what());
    return EST_ERR_ARGUMENT;
  } catch (const std::bad_alloc&) {
    record(fn, "out of memory");
    return EST_ERR_INTERNAL;
  } catch (const std::exception& e) {
    record(fn, e.what());
    return EST_ERR_INTERNAL;
  } catch (...) {
    record(fn, "unknown exception");
    return EST_ERR_INTERNAL;
  }
}

// Throws std::invalid_argument (EST_ERR_ARGUMENT) naming the argument when `p` is NULL.
inline void require(const void* p, const char* arg) {
  if (p == nullptr) throw std::invalid_argument(std::string("argument '") + arg + "' is NULL");
}

inline void require_count(std::int64_t n, const char* arg) {
  if (n < 0)
    throw std::invalid_argument(std::string("argument '") + arg + "' is negative (" +
                                std::to_string(n) + ")");
}

// Sets *out to NULL (when out is not NULL) so that a failed constructor leaves no stale handle.
template <class T>
void clear_out(T** out) {
  if (out != nullptr) *out = nullptr;
}

// The value of a C enum as an int. A C caller may pass any int in an enum; in C++ loading an
// enum object whose value is outside its enumerators' range is undefined, so the value is read
// from the object's bytes instead (GCC and Clang give these enums the size of an int).
template <class E>
int enum_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are expected to have the size of an int");
  int v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace estuary::capi
