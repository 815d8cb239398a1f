# Types of the estuary package for IDEs and mypy: __init__.py loads these names lazily (PEP 562,
# so that importing estuary does not initialise MPI); here they are plain re-exports. The
# compiled module's own stubs, _estuary/*.pyi, are written by nanobind's stubgen at build time
# (python/CMakeLists.txt) and shipped in the wheel (scripts/wheel).
from . import couple as couple
from . import io as io
from ._estuary import (
    Decomp as Decomp,
    Error as Error,
    Grid as Grid,
    GridGen as GridGen,
    MpiError as MpiError,
    Redist as Redist,
    Remap as Remap,
    bicubic_weights as bicubic_weights,
    bilinear_weights as bilinear_weights,
    conservative_weights as conservative_weights,
    distance_weights as distance_weights,
    gen as gen,
    grid_file_info as grid_file_info,
    info_name as info_name,
    oasis_grid_names as oasis_grid_names,
    oasis_partition as oasis_partition,
    oasis_partition_global_size as oasis_partition_global_size,
    read_coupling_config as read_coupling_config,
    read_grid_file as read_grid_file,
    read_weights as read_weights,
    schedule_names as schedule_names,
    stack_weights as stack_weights,
    write_weights as write_weights,
)
from .couple import (
    OASIS as OASIS,
    ApplePartition as ApplePartition,
    BoxPartition as BoxPartition,
    Component as Component,
    OasisParameters as OasisParameters,
    OrangePartition as OrangePartition,
    PointsPartition as PointsPartition,
    SerialPartition as SerialPartition,
    Var as Var,
    abort as abort,
)
from .io import Output as Output, Reader as Reader

__version__: str

def abort_on_exception(enabled: bool = True) -> None: ...
