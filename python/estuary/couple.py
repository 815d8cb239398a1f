"""The coupler, with pyOASIS's names and call sequence.

A pyOASIS model ports by changing its import::

    import estuary.couple as pyoasis          # was: import pyoasis
    from estuary.couple import OASIS          # was: from pyoasis import OASIS

    comp = pyoasis.Component("ocean")         # collective over MPI.COMM_WORLD
    comm = comp.localcomm                     # an mpi4py communicator: the component's ranks
    part = pyoasis.ApplePartition(offset, size, global_size=n)
    sst = pyoasis.Var("SST", part, OASIS.OUT)   # or OasisParameters.OASIS_OUT
    comp.enddef()
    for t in range(0, runtime, dt):
        info = sst.put(t, field)              # numpy float64, the partition's local order
    comp.terminate()

Differences from pyOASIS:
 - estuary needs each partition's global size; pass ``global_size=``. Without it (-1), the
   size is the largest index end over the component's ranks: that is collective over
   ``component.localcomm``, so every rank of the component must then define the partition.
 - partitions and variables belong to the component given as ``component=`` or, as in pyOASIS,
   to the last one created on this rank.
 - errors raise ``estuary.Error`` with estuary's message (which names the field, the time, the
   partner ...), not an OASIS error code.
 - ``Component(name, coupled=True, communicator=None, config="", directory="")``: ``config`` is
   the namcouple or YAML file (default: $ESTUARY_CONFIG, estuary.yaml, namcouple),
   ``directory`` where restarts and logs go.
 - OASIS3-MCT's queries and communicators have pyOASIS's names: ``Var.put_inquire``,
   ``Var.cpl_freqs`` (and ``Var.ncpl``), ``Component.set_couplcomm``, ``get_intercomm``,
   ``get_intracomm``, ``get_multi_intracomm``, ``debug_level``; ``OASIS_REAL``,
   ``OASIS_DOUBLE``, ``OASIS_SUCCESS`` are OASIS's values.
"""
from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

if TYPE_CHECKING:  # the stubs of the native module (nanobind stubgen), shipped in the package
    from . import _estuary
else:
    from . import _native

    _estuary = _native()

# A weight function's answer (Component.register_weights): rows, cols, weights.
WeightLinks = tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike]


class OasisParameters(enum.IntEnum):
    """OASIS's parameter values: the directions of a Var and the info codes put and get return.

    An IntEnum: each member equals OASIS's integer (``OasisParameters.OASIS_SENT == 4``), so code
    that compares with the integers keeps working. Every member has pyOASIS's name
    (``OASIS_SENT``, the name ``str()`` and ``.name`` show), and also answers to OASIS3-MCT's own
    spelling of mod_oasis_parameters and oasis_c.h (``OASIS_Sent``, ``OASIS_Recvd``,
    ``OASIS_Waitgroup``, ...) and pyOASIS's short one (``SENT``, ``RECVD``, ...): aliases, the same
    member. estuary's puts return OASIS_OK (nothing to do at this time), OASIS_SENT,
    OASIS_LOCTRANS, OASIS_TOREST, OASIS_OUTPUT, OASIS_SENTOUT or OASIS_TORESTOUT; its gets
    OASIS_OK, OASIS_RECVD, OASIS_FROMREST, OASIS_INPUT, OASIS_RECVOUT or OASIS_FROMRESTOUT.
    OASIS_WAITGROUP is OASIS's and never returned by estuary (fields put together are sent
    together when the last one is put)."""

    OASIS_OK = 0
    OASIS_ERROR = -10
    OASIS_NOTDEF = -2
    OASIS_VAR_UNCPL = -1
    OASIS_OUT = 20
    OASIS_IN = 21
    OASIS_INOUT = 2
    OASIS_RECVD = 3
    OASIS_SENT = 4
    OASIS_LOCTRANS = 5
    OASIS_TOREST = 6
    OASIS_OUTPUT = 7
    OASIS_SENTOUT = 8
    OASIS_TORESTOUT = 9
    OASIS_FROMREST = 10
    OASIS_INPUT = 11
    OASIS_RECVOUT = 12
    OASIS_FROMRESTOUT = 13
    OASIS_WAITGROUP = 14
    # OASIS3-MCT's spelling (mod_oasis_parameters.F90, oasis_c.h): aliases of the members above.
    OASIS_Ok = 0
    OASIS_Error = -10
    OASIS_NotDef = -2
    OASIS_Var_Uncpl = -1
    OASIS_Out = 20
    OASIS_In = 21
    OASIS_InOut = 2
    OASIS_Recvd = 3
    OASIS_Sent = 4
    OASIS_LocTrans = 5
    OASIS_ToRest = 6
    OASIS_Output = 7
    OASIS_SentOut = 8
    OASIS_ToRestOut = 9
    OASIS_FromRest = 10
    OASIS_Input = 11
    OASIS_RecvOut = 12
    OASIS_FromRestOut = 13
    OASIS_Waitgroup = 14
    # pyOASIS's short names.
    OK = 0
    ERROR = -10
    NOTDEF = -2
    VAR_UNCPL = -1
    OUT = 20
    IN = 21
    INOUT = 2
    RECVD = 3
    SENT = 4
    LOCTRANS = 5
    TOREST = 6
    OUTPUT = 7
    SENTOUT = 8
    TORESTOUT = 9
    FROMREST = 10
    INPUT = 11
    RECVOUT = 12
    FROMRESTOUT = 13
    WAITGROUP = 14


# OASIS's other parameter values (OASIS_Success of its C bindings; the types of oasis_def_var):
# plain ints, outside OasisParameters, whose values would alias its info codes.
OASIS_SUCCESS = 0
OASIS_REAL = 4
OASIS_DOUBLE = 8


class OASIS:
    """The short names pyOASIS also offers (``from pyoasis import OASIS``): OASIS.OUT, OASIS.Sent ...

    Each is the OasisParameters member (an int), or OASIS's plain integer for Success, Real and
    Double."""

    OUT = OasisParameters.OASIS_OUT
    IN = OasisParameters.OASIS_IN
    Ok = OasisParameters.OASIS_OK
    Recvd = OasisParameters.OASIS_RECVD
    Sent = OasisParameters.OASIS_SENT
    LocTrans = OasisParameters.OASIS_LOCTRANS
    ToRest = OasisParameters.OASIS_TOREST
    Output = OasisParameters.OASIS_OUTPUT
    SentOut = OasisParameters.OASIS_SENTOUT
    ToRestOut = OasisParameters.OASIS_TORESTOUT
    FromRest = OasisParameters.OASIS_FROMREST
    Input = OasisParameters.OASIS_INPUT
    RecvOut = OasisParameters.OASIS_RECVOUT
    FromRestOut = OasisParameters.OASIS_FROMRESTOUT
    Waitgroup = OasisParameters.OASIS_WAITGROUP
    Success = OASIS_SUCCESS
    Real = OASIS_REAL
    Double = OASIS_DOUBLE


_current: Component | None = None  # the last component created on this rank


def _component(component: Component | None) -> Component:
    c = component if component is not None else _current
    if c is None:
        raise _estuary.Error("estuary: no component on this rank (create estuary.couple.Component first)")
    return c


class Component:
    """A coupled component (pyOASIS's ``pyoasis.Component``).

    ``Component(name, coupled=True, communicator=None, config="", directory="")`` is collective
    over ``communicator``: every rank of it creates exactly one Component, with the name of the
    component it belongs to. Partitions and variables created afterwards on this rank belong to
    it unless given another ``component=``."""

    couplcomm: MPI.Intracomm  # set by create_couplcomm and set_couplcomm

    def __init__(self, name: str, coupled: bool = True, communicator: MPI.Intracomm | None = None, config: str = "",
                 directory: str = "") -> None:
        """Collective over communicator: joins the coupled run as component ``name``.

        name: the component's name, as the configuration names it.
        coupled: OASIS's flag; False leaves the component out of the coupling (its enddef,
        puts and gets do nothing). Every rank of the world says whether it couples.
        communicator: the mpi4py communicator of the coupled run (None: MPI.COMM_WORLD).
        config: the namcouple or YAML file ("": $ESTUARY_CONFIG, else estuary.yaml, else
        namcouple). directory: where restarts, outputs and logs go ("": the working directory).
        Raises estuary.Error (on every rank) when the set-up fails."""
        global _current
        self.name = name
        self.communicator = communicator if communicator is not None else MPI.COMM_WORLD
        # coupled=False (OASIS's): the component is left out of the coupled ones' world; its
        # enddef, puts and gets do nothing. Every rank of the world says whether it couples.
        self.coupled = bool(coupled)
        self._c = _estuary.Component(name, config=config, directory=directory, world=self.communicator,
                                     coupled=self.coupled)
        self._terminated = False
        self.partitions: list[Partition] = []
        self.variables: list[Var] = []
        _current = self

    @property
    def localcomm(self) -> MPI.Intracomm:
        """The component's own ranks (mpi4py communicator; owned by estuary, do not free it)."""
        return self._c.comm

    def get_localcomm(self) -> MPI.Intracomm:
        """pyOASIS's oasis_get_localcomm: the same as ``localcomm``."""
        return self.localcomm

    @property
    def native(self) -> _estuary.Component:
        """The low-level _estuary.Component (def_grid, timers, last_source_integral ...)."""
        return self._c

    def def_grid(self, name: str, partition: Partition, grid: _estuary.Grid) -> None:
        """Local: the cells of grid ``name`` at ``partition``'s points (``grid``, an estuary.Grid
        in the partition's local order; degrees), for SCRIPR and CONSERV couplings. Raises
        estuary.Error when the grid's size is not the partition's."""
        self._c.def_grid(name, partition.id, grid)

    def register_weights(self, name: str,
                         fn: Callable[[dict[str, Any]], WeightLinks]) -> None:
        """YAC's callback interpolation: the weights of the couplings configured with
        ``scripr: {method: callback, name: NAME}``. ``fn(query)`` gets a dict (``coupling``,
        ``src_lon``, ``src_lat``, ``src_mask``: every source point; ``dst_index``, ``dst_lon``,
        ``dst_lat``: this rank's targets; degrees, global indices) and returns ``(rows, cols,
        weights)`` for this rank's targets. Register on the target component's ranks before enddef.
        ``name``: the weight function's name in the configuration. An exception ``fn`` raises
        becomes estuary.Error at enddef, naming the coupling."""
        self._c.register_weights(name, fn)

    def enddef(self) -> None:
        """Collective over the world: reads the configuration and sets up every coupling.

        Raises estuary.Error naming the file and line, the field or the component at fault."""
        self._c.enddef()

    def terminate(self) -> None:
        """Collective over the world: finishes transfers, writes restarts. Idempotent."""
        global _current
        if not self._terminated:
            self._terminated = True
            self._c.terminate()
        if _current is self:
            _current = None

    def timers(self) -> list[dict[str, Any]]:
        """Local: per field, a dict of field, puts, gets, exchanges (counts) and put_s, get_s,
        wait_s, remap_s (this rank's seconds)."""
        return self._c.timers()

    @property
    def runtime(self) -> float:
        """The run length of the configuration ($RUNTIME, seconds); after enddef."""
        return self._c.runtime

    def create_couplcomm(self, coupled: bool, allcomm: MPI.Intracomm | None = None) -> MPI.Intracomm:
        """oasis_create_couplcomm: the communicator of the ranks of ``allcomm`` (default
        ``localcomm``) that take part in the coupling. Collective over allcomm: ranks with
        ``coupled`` true get a new communicator (in allcomm's rank order), which is also kept as
        ``self.couplcomm``; the others get ``MPI.COMM_NULL``. The caller may Free it. Raises
        estuary.Error when allcomm is MPI.COMM_NULL."""
        comm = self.localcomm if allcomm is None else allcomm
        if comm == MPI.COMM_NULL:
            raise _estuary.Error(f"estuary: create_couplcomm of component {self.name}: allcomm is MPI.COMM_NULL")
        self.couplcomm = cast(MPI.Intracomm, comm.Split(0 if coupled else MPI.UNDEFINED, comm.rank))
        # As OASIS's oasis_create_couplcomm: also the component's coupling communicator.
        self._c.set_couplcomm(self.couplcomm)
        return self.couplcomm

    # ---- OASIS3-MCT's coupling communicator, communicators between components, debug level
    # (pyOASIS's names; Component.native has the same calls with estuary's) ----

    def set_couplcomm(self, couplcomm: MPI.Intracomm) -> None:
        """oasis_set_couplcomm, before enddef on every rank of the component: the ranks that take
        part in the coupling are those of ``couplcomm`` (``MPI.COMM_NULL`` on the others). Ranks
        left out define no variables; the queries and communicators below fail there."""
        self._c.set_couplcomm(couplcomm)
        self.couplcomm = couplcomm

    def get_intercomm(self, compname: str) -> MPI.Intercomm:
        """oasis_get_intercomm, after enddef, collective over the coupling ranks of this component
        and of ``compname``: a new intercommunicator between them (the caller may Free it)."""
        return MPI.Intercomm(MPI.Comm.f2py(self._c.get_intercomm(compname)))

    def get_intracomm(self, compname: str) -> MPI.Intracomm:
        """oasis_get_intracomm: the coupling ranks of this component and of ``compname`` in one new
        intracommunicator (the component whose first rank comes first in the world comes first);
        collective over them, after enddef. The caller may Free it."""
        return self._c.get_intracomm(compname)

    def get_multi_intracomm(self, complist: Iterable[str]) -> tuple[MPI.Intracomm, dict[str, int]]:
        """oasis_get_multi_intracomm, after enddef, collective over the coupling ranks of the
        components of ``complist`` (this one among them): ``(intracommunicator, {name: rank of
        its root in it})``, components in the order of their first world rank."""
        names = list(complist)
        comm, roots = self._c.get_multi_intracomm(names)
        return comm, dict(zip(names, roots))

    @property
    def debug_level(self) -> int:
        """oasis_get_debug / oasis_set_debug: initially the configuration's $NLOGPRT (after enddef);
        kept, estuary's log does not depend on it."""
        return self._c.debug_level()

    @debug_level.setter
    def debug_level(self, level: int) -> None:
        self._c.set_debug_level(int(level))

    def abort(self, message: str = "", errorcode: int = 1) -> None:
        """oasis_abort: prints ``estuary abort: component NAME: message`` to stderr and ends the
        whole run (MPI_Abort on MPI.COMM_WORLD with ``errorcode``)."""
        abort(message, errorcode, component=self)

    def __enter__(self) -> Component:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        if exc[0] is None:
            self.terminate()
        return False

    def __repr__(self) -> str:
        return f"estuary.couple.Component({self.name!r})"


def abort(message: str = "", errorcode: int = 1, component: Component | None = None) -> None:
    """oasis_abort (pyOASIS's ``pyoasis.abort``): prints ``estuary abort: component NAME:
    message`` to stderr and ends the whole run with MPI_Abort(MPI.COMM_WORLD, errorcode).
    ``component``: the one named (None: the last created on this rank)."""
    c = component if component is not None else _current
    who = f"component {c.name}: " if c is not None else ""
    print(f"estuary abort: {who}{message}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    MPI.COMM_WORLD.Abort(errorcode)


class Partition:
    """This rank's points of a grid, as an OASIS ig_paral array (0-based offsets).

    ``Partition(ig_paral, global_size=-1, name="", component=None)``: ``ig_paral`` is OASIS's
    array (see estuary.oasis_partition); ``global_size`` the whole grid's points (-1: the
    largest index end over the component's ranks, collective over its coupling ranks, as OASIS
    infers it); ``name`` matches the partition across ranks; ``component`` the one it belongs
    to (None: the last created on this rank). Raises estuary.Error for a malformed ig_paral or
    no component."""

    def __init__(self, ig_paral: npt.ArrayLike, global_size: int = -1, name: str = "",
                 component: Component | None = None) -> None:
        comp = _component(component)
        ig = np.ascontiguousarray(ig_paral, dtype=np.int64)
        if global_size is None or global_size < 0:  # inferred by the core, as OASIS does (collective)
            global_size = _estuary.oasis_partition_global_size(ig, comp._c.coupling_comm())
        self.component = comp
        self.ig_paral = ig
        self.global_size = int(global_size)
        self.decomp = _estuary.oasis_partition(ig, self.global_size)
        self.id = comp._c.def_partition(self.decomp, name)
        self.name = name
        comp.partitions.append(self)

    @property
    def size(self) -> int:
        """This rank's points."""
        return self.decomp.size

    def get_id(self) -> int:
        """The partition's id in its component."""
        return self.id


class SerialPartition(Partition):
    """The whole grid on this rank: ig_paral [0, 0, size]; ``size`` points (``global_size``,
    ``name``, ``component`` as for Partition; global_size -1: size)."""

    def __init__(self, size: int, global_size: int = -1, name: str = "", component: Component | None = None) -> None:
        super().__init__([0, 0, size], size if global_size is None or global_size < 0 else global_size,
                         name, component)


class ApplePartition(Partition):
    """One contiguous segment: ig_paral [1, offset, size], the ``size`` points from global index
    ``offset`` (``global_size``, ``name``, ``component`` as for Partition)."""

    def __init__(self, offset: int, size: int, global_size: int = -1, name: str = "",
                 component: Component | None = None) -> None:
        super().__init__([1, offset, size], global_size, name, component)


class BoxPartition(Partition):
    """A box of a 2-D grid: ig_paral [2, global_offset, local_extent_x, local_extent_y,
    global_extent_x]: local_extent_x x local_extent_y points from global index global_offset of
    a grid global_extent_x wide, x fastest (``global_size``, ``name``, ``component`` as for
    Partition)."""

    def __init__(self, global_offset: int, local_extent_x: int, local_extent_y: int, global_extent_x: int,
                 global_size: int = -1, name: str = "", component: Component | None = None) -> None:
        super().__init__([2, global_offset, local_extent_x, local_extent_y, global_extent_x], global_size, name,
                         component)


class OrangePartition(Partition):
    """Several segments: ig_paral [3, nseg, offset1, extent1, ...], segment k the extents[k]
    points from global index offsets[k] (``global_size``, ``name``, ``component`` as for
    Partition). Raises estuary.Error for lists of different lengths."""

    def __init__(self, offsets: Iterable[int], extents: Iterable[int], global_size: int = -1, name: str = "",
                 component: Component | None = None) -> None:
        offsets, extents = list(offsets), list(extents)
        if len(offsets) != len(extents):
            raise _estuary.Error(f"estuary: OrangePartition with {len(offsets)} offsets and {len(extents)} extents")
        ig: list[int] = [3, len(offsets)]
        for o, e in zip(offsets, extents):
            ig += [o, e]
        super().__init__(ig, global_size, name, component)


class PointsPartition(Partition):
    """Explicit points: ig_paral [4, npts, index1, ...], the 0-based ``global_indices`` in this
    rank's local order (``global_size``, ``name``, ``component`` as for Partition)."""

    def __init__(self, global_indices: npt.ArrayLike, global_size: int = -1, name: str = "",
                 component: Component | None = None) -> None:
        idx = np.asarray(global_indices, dtype=np.int64).ravel()
        super().__init__(np.concatenate([[4, len(idx)], idx]), global_size, name, component)


# ---- OASIS grid files (pyOASIS's Grid: grids.nc, masks.nc, areas.nc written at enddef) ----

class Grid:
    """pyOASIS's ``Grid``: a grid described with OASIS's grid-writing calls, written into
    grids.nc, masks.nc and areas.nc of the run folder at ``enddef`` (every component together,
    a variable only when the file lacks it). A SCRIPR or CONSERV coupling whose grid was not
    given with ``Component.def_grid`` reads it from these files, as OASIS does.

        grid = Grid("torc", nx, ny, lon, lat, partition)   # partition None: the whole grid
        grid.set_corners(clo, cla)                          # (nx, ny, nc)
        grid.set_mask(mask)                                 # OASIS's convention: 1 = MASKED
        grid.set_area(area)
        grid.write()

    Arrays are indexed as OASIS's Fortran ones, ``[i, j]`` and ``[i, j, corner]`` (x index
    first), whatever their memory order; with a partition they hold this rank's points: a 1-D
    array in the partition's local order, or a box partition's ``(local_nx, local_ny)``."""

    def __init__(self, cgrid: str, nx_global: int, ny_global: int, lon: npt.ArrayLike, lat: npt.ArrayLike,
                 partition: Partition | None = None, component: Component | None = None) -> None:
        """Local: grid ``cgrid`` (OASIS's prefix) of nx_global x ny_global points; lon, lat: the
        cell centres in degrees (see the class for the layout); partition: the points this rank
        gives (None: the whole grid); component: the one it belongs to (None: the partition's,
        else the last created on this rank)."""
        self.name = cgrid
        self.nx, self.ny = int(nx_global), int(ny_global)
        self.partition = partition
        self.component = partition.component if partition is not None else _component(component)
        self._lon, self._lat = self._flat(lon), self._flat(lat)
        self._corners: tuple[int, npt.NDArray[Any], npt.NDArray[Any]] | None = None
        self._mask: npt.NDArray[Any] | None = None
        self._area: npt.NDArray[Any] | None = None

    @staticmethod
    def _flat(a: npt.ArrayLike, dtype: type = np.float64) -> npt.NDArray[Any]:
        # OASIS's order: the first index fastest (Fortran order), as pyOASIS hands it to OASIS.
        return np.ascontiguousarray(np.ravel(np.asarray(a, dtype=dtype), order="F"))

    @property
    def _part(self) -> int:
        return -1 if self.partition is None else self.partition.id

    def set_corners(self, clo: npt.ArrayLike, cla: npt.ArrayLike) -> None:
        """The cell corners: clo, cla, degrees, two (nx, ny, nc) or (npts, nc) arrays of one shape.
        Raises estuary.Error for other shapes."""
        clo, cla = np.asarray(clo), np.asarray(cla)
        if clo.ndim < 2 or clo.shape != cla.shape:
            raise _estuary.Error(f"estuary: grid {self.name}: corners must be two (nx, ny, nc) or (npts, nc) arrays "
                                 f"of one shape, not {clo.shape} and {cla.shape}")
        self._corners = (int(clo.shape[-1]), self._flat(clo), self._flat(cla))

    def set_mask(self, mask: npt.ArrayLike, companion: object = None) -> None:
        """The mask, OASIS's convention: 1 = masked (land), 0 = valid. (``companion`` is not used.)"""
        self._mask = self._flat(mask, np.int32)

    def set_area(self, area: npt.ArrayLike) -> None:
        """The cell areas: ``area``, m^2 or rad^2 as the model has them."""
        self._area = self._flat(area)

    def write(self) -> None:
        """Local: start_grids_writing, the pieces given, terminate_grids_writing."""
        c = self.component.native
        c.start_grids_writing()
        c.write_grid(self.name, self.nx, self.ny, self._lon, self._lat, self._part)
        if self._corners is not None:
            nc, clo, cla = self._corners
            c.write_corner(self.name, self.nx, self.ny, nc, clo, cla, self._part)
        if self._mask is not None:
            c.write_mask(self.name, self.nx, self.ny, self._mask, self._part)
        if self._area is not None:
            c.write_area(self.name, self.nx, self.ny, self._area, self._part)
        c.terminate_grids_writing()

    def __repr__(self) -> str:
        return f"estuary.couple.Grid({self.name!r}, {self.nx}, {self.ny})"

# ---- end of OASIS grid files ----


class Var:
    """A coupling field on a partition: ``Var(name, partition, OASIS.OUT, bundle_size=1)``.

    ``put(time, field)`` and ``get(time, field)`` take numpy float64 arrays of
    ``bundle_size * partition.size`` values (any shape; C- or Fortran-contiguous, the memory
    order being the local order, bundle members slowest) and return the info code
    (an OasisParameters member, equal to OASIS's integer: OASIS.Sent == 4). ``get`` writes into ``field`` in
    place, so it must be a contiguous float64 array already."""

    def __init__(self, name: str, partition: Partition, direction: int, bundle_size: int = 1) -> None:
        """Local: coupling field ``name`` (as the configuration names it) on ``partition``.

        direction: OASIS.OUT (this component puts it) or OASIS.IN (gets it); an OasisParameters
        member or its integer. bundle_size: values per point (a bundle moves as one field,
        members slowest). Raises estuary.Error for another direction or bundle_size < 1."""
        d = int(direction.value if isinstance(direction, enum.Enum) else direction)
        if d not in (OasisParameters.OASIS_OUT, OasisParameters.OASIS_IN):
            raise _estuary.Error(f"estuary: field {name}: direction {direction!r} is neither OASIS_OUT nor OASIS_IN")
        self.name = name
        self.partition = partition
        self.direction = OasisParameters(d)
        self.bundle_size = bundle_size
        self._comp = partition.component
        self.id = self._comp._c.def_var(name, partition.id, d == OasisParameters.OASIS_OUT, bundle_size)
        self._comp.variables.append(self)

    def put(self, time: float, field: npt.ArrayLike, *gradients: npt.ArrayLike,
            fraction: npt.ArrayLike | None = None) -> OasisParameters:
        """oasis_put: hands ``field`` over at model ``time`` (seconds since the start of the run);
        returns the info code (OASIS.Sent, OASIS.LocTrans, OASIS.Ok ...).

        field: bundle_size * partition.size float64 values in the partition's local order.
        ``gradients``: OASIS's optional fld2..fld4, the model's own source gradients
        for a coupling whose weights have several columns (a num_wgts 3 or 4 file, SCRIPR BICUBIC);
        ``fraction``: YAC's fractional mask (0..1 per source value; the target gets W (f x) / W f).
        Raises estuary.Error for an input field, a time that is not a coupling step's or a wrong
        size."""
        if self.direction != OasisParameters.OASIS_OUT:
            raise _estuary.Error(f"estuary: put of {self.name}, an input field (OASIS_IN)")
        # Laid out as the field (any contiguous order, as put takes it).
        grads = [np.asarray(g, dtype=np.float64) for g in gradients]
        frac = None if fraction is None else np.asarray(fraction, dtype=np.float64)
        values = np.asarray(field, dtype=np.float64)  # the array itself when it is float64 already
        return OasisParameters(self._comp._c.put(self.id, float(time), values, gradients=grads or None, fraction=frac))

    def get(self, time: float, field: npt.NDArray[np.float64]) -> OasisParameters:
        """oasis_get at model ``time`` (seconds since the start of the run): fills ``field`` in
        place when something arrives; returns the info code (an int too: OASIS.Recvd == 3).

        field: a contiguous, writable float64 array of bundle_size * partition.size values.
        Raises TypeError for another array, estuary.Error for an output field, a wrong size or a
        partner that does not answer within the time-out."""
        if self.direction != OasisParameters.OASIS_IN:
            raise _estuary.Error(f"estuary: get of {self.name}, an output field (OASIS_OUT)")
        return OasisParameters(self._comp._c.get(self.id, float(time), field))

    def get_id(self) -> int:
        """The variable's id in its component."""
        return self.id

    def get_name(self) -> str:
        """The variable's name."""
        return self.name

    # ---- OASIS3-MCT's run-time queries (pyOASIS's names) ----

    def put_inquire(self, time: float) -> OasisParameters:
        """oasis_put_inquire, after enddef: the info code a put at ``time`` (seconds) would return
        (OASIS.Sent, OASIS.LocTrans, OASIS.ToRest, ...), without putting. Raises estuary.Error
        for an input field."""
        if self.direction != OasisParameters.OASIS_OUT:
            raise _estuary.Error(f"estuary: put_inquire of {self.name}, an input field (OASIS_IN)")
        return OasisParameters(self._comp._c.put_inquire(self.id, float(time)))

    def get_freqs(self) -> npt.NDArray[np.int64] | npt.NDArray[np.float64]:
        """oasis_get_freqs, after enddef: the periods (seconds) of the couplings the variable takes
        part in, in the configuration's order (integers when they are whole seconds, as OASIS's)."""
        freqs = np.asarray(self._comp._c.get_freqs(self.id, self.direction == OasisParameters.OASIS_OUT))
        return freqs.astype(np.int64) if np.all(freqs == np.round(freqs)) else freqs

    @property
    def cpl_freqs(self) -> npt.NDArray[np.int64] | npt.NDArray[np.float64]:
        """pyOASIS's name of get_freqs(); len(cpl_freqs) is oasis_get_ncpl."""
        return self.get_freqs()

    @property
    def ncpl(self) -> int:
        """oasis_get_ncpl: the number of couplings the variable takes part in."""
        return self._comp._c.get_ncpl(self.id)

    def __repr__(self) -> str:
        return f"estuary.couple.Var({self.name!r}, {self.direction.name})"

