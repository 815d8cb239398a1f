# Run by `cmake --install <build> --component wheel` after the wheel's files are in place
# (python/CMakeLists.txt: install(SCRIPT)), so that both ways to the wheel — scripts/wheel from a
# build folder and scikit-build-core (`pip wheel ./python`) — get the same finished layout:
#
#  - shared libraries once each: a wheel holds no symbolic links (zip has none; pip and
#    scikit-build-core would store each link as a full copy), so the one file under the name the
#    module and the programs ask for (its SONAME, libestuary.so.0), not three copies;
#  - the bindings' stubs name the module as stubgen imported it (top-level _estuary, as in the
#    build tree): in the package it is estuary._estuary.
set(_pkg "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/estuary")

file(GLOB _libs LIST_DIRECTORIES false "${_pkg}/_lib/*.so*")
foreach(_lib IN LISTS _libs)
  if(NOT IS_SYMLINK "${_lib}")
    continue()
  endif()
  get_filename_component(_name "${_lib}" NAME)
  if(_name MATCHES "\\.so\\.[0-9]+$")
    # the SONAME link: the real file takes its place
    file(REAL_PATH "${_lib}" _real)
    file(REMOVE "${_lib}")
    file(RENAME "${_real}" "${_lib}")
  else()
    file(REMOVE "${_lib}")  # the development link libX.so: nothing loads it at run time
  endif()
endforeach()
# what is left besides the SONAME files: nothing asks for those names
file(GLOB _libs LIST_DIRECTORIES false "${_pkg}/_lib/*.so*")
foreach(_lib IN LISTS _libs)
  get_filename_component(_name "${_lib}" NAME)
  if(NOT _name MATCHES "\\.so\\.[0-9]+$")
    message(FATAL_ERROR "wheel_fixup.cmake: ${_lib} has no SONAME link (a library without SOVERSION?): "
      "the module and the programs would not find it under the name they ask for")
  endif()
endforeach()

file(GLOB _stubs LIST_DIRECTORIES false "${_pkg}/_estuary/*.pyi")
foreach(_stub IN LISTS _stubs)
  file(READ "${_stub}" _text)
  string(REPLACE "from _estuary import" "from estuary._estuary import" _text "${_text}")
  string(REGEX REPLACE "(^|\n)import _estuary\n" "\\1import estuary._estuary as _estuary\n" _text "${_text}")
  file(WRITE "${_stub}" "${_text}")
endforeach()
