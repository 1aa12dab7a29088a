"""One version number: `pyproject.toml`'s, as installed."""

import importlib.metadata

try:
    __version__ = importlib.metadata.version("redundax")
except importlib.metadata.PackageNotFoundError:  # a source tree put on sys.path by hand
    __version__ = "0+unknown"
