// What this build of the I/O part can write with (the optional libraries it was built with).
#include "estuary/io.hpp"

namespace estuary::io {

bool have_pnetcdf() {
#ifdef ESTUARY_HAVE_PNETCDF
  return true;
#else
  return false;
#endif
}

}  // namespace estuary::io
