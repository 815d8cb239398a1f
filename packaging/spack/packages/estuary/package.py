# Spack recipe for estuary (docs/building.md, "Spack"). Use it from this repository:
#
#   spack repo add packaging/spack          # this folder is a Spack package repository
#   spack install estuary@main ~simgrid     # variants: +netcdf +yaml +pnetcdf +muparser +simgrid +fortran
#
# Every variant maps onto one CMake option of CMakeLists.txt; python/tests/test_packaging.py checks
# that the options named here exist there.
import os

from spack.package import *

# The checkout this recipe lives in (packaging/spack/packages/estuary/package.py): estuary has no
# public release yet, so Spack fetches from it, or from the repository ESTUARY_GIT names.
_CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


class Estuary(CMakePackage):
    """Data movement for Earth system models: redistribution between decompositions, remapping,
    an OASIS3-MCT-shaped coupler, an asynchronous I/O server and a SimGrid simulator of the same
    exchanges. Only MPI is required; each other dependency turns on the parts that need it."""

    homepage = "file://" + _CHECKOUT + "/README.md"
    git = os.environ.get("ESTUARY_GIT", "file://" + _CHECKOUT)

    version("main", branch="main")

    variant("netcdf", default=True, description="netCDF: weight, grid, restart and output files; the remap, couple and io parts")
    variant("yaml", default=True, description="yaml-cpp (and pugixml): the YAML (and XIOS XML) configuration of the couple and io parts")
    variant("pnetcdf", default=True, description="PnetCDF: CDF-5 files written by several I/O ranks")
    variant("muparser", default=True, description="muParser: derived output fields (expressions of fields in the io configuration)")
    variant("simgrid", default=False, description="SimGrid: the communication simulator (estuary_sim)")
    variant("fortran", default=True, description="the Fortran module estuary_fortran and the OASIS-shaped port")
    variant("shared", default=True, description="libestuary as a shared library")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.20:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("netcdf-c+mpi", when="+netcdf")
    depends_on("yaml-cpp", when="+yaml")
    depends_on("pugixml", when="+yaml")  # the I/O server's XIOS XML (iodef.xml)
    depends_on("parallel-netcdf", when="+pnetcdf")
    depends_on("muparser", when="+muparser")
    depends_on("simgrid", when="+simgrid")
    depends_on("googletest", type="test")

    # The coupler and the I/O server read YAML and write netCDF: without either they are left out,
    # and the Fortran module wraps exactly those.
    conflicts("+fortran", when="~netcdf", msg="the Fortran module wraps the coupler and the I/O server, which need netCDF")
    conflicts("+fortran", when="~yaml", msg="the Fortran module wraps the coupler and the I/O server, which need yaml-cpp")

    generator("ninja")

    def cmake_args(self):
        return [
            self.define_from_variant("ESTUARY_WITH_NETCDF", "netcdf"),
            self.define_from_variant("ESTUARY_WITH_YAML", "yaml"),
            self.define_from_variant("ESTUARY_WITH_PNETCDF", "pnetcdf"),
            self.define_from_variant("ESTUARY_WITH_MUPARSER", "muparser"),
            self.define_from_variant("ESTUARY_WITH_SIMGRID", "simgrid"),
            self.define_from_variant("ESTUARY_FORTRAN", "fortran"),
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define("ESTUARY_BUILD_TESTS", self.run_tests),
            self.define("ESTUARY_BUILD_EXAMPLES", self.run_tests),
            self.define("ESTUARY_BUILD_BENCH", False),
            self.define("ESTUARY_PYTHON", False),
        ]
