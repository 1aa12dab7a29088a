"""Reading and writing redundax files: mechanism configurations (TOML)."""

from .config import TYPES as TYPES
from .config import Config as Config
from .config import ConfigError as ConfigError
from .config import load_config as load_config
from .config import load_mechanism as load_mechanism
