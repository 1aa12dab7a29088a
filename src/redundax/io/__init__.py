"""Reading and writing redundax files: mechanism configurations (TOML), MJCF and URDF
models (through MuJoCo's compiler, the optional extra `mjcf`), and the time
histories of simulated runs (NPZ, CSV)."""

from ._mujoco import (
    UnmappedElementWarning as UnmappedElementWarning,
    from_mjcf as from_mjcf,
    from_mujoco as from_mujoco,
)
from .config import (
    TYPES as TYPES,
    Config as Config,
    ConfigError as ConfigError,
    EliminatedRows as EliminatedRows,
    SimulationOptions as SimulationOptions,
    load_config as load_config,
    load_mechanism as load_mechanism,
)
from .results import check_output as check_output, read_run as read_run, write_run as write_run

__all__ = [
    "Config",
    "ConfigError",
    "EliminatedRows",
    "SimulationOptions",
    "TYPES",
    "check_output",
    "load_config",
    "load_mechanism",
    "read_run",
    "write_run",
    "from_mjcf",
    "from_mujoco",
    "UnmappedElementWarning",
]
