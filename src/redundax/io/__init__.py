"""Reading and writing redundax files: mechanism configurations (TOML) and the time
histories of simulated runs (NPZ, CSV)."""

from .config import TYPES as TYPES
from .config import Config as Config
from .config import ConfigError as ConfigError
from .config import EliminatedRows as EliminatedRows
from .config import SimulationOptions as SimulationOptions
from .config import load_config as load_config
from .config import load_mechanism as load_mechanism
from .results import check_output as check_output
from .results import read_run as read_run
from .results import write_run as write_run
