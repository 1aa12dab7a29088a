"""JAX's persistent compilation cache, turned on by the command line only.

Most of the time of a short `redundax` command goes into compiling its programs
(the solvability analysis, the simulation); with the cache a second run of the same
command loads them from disk instead. The library itself never turns it on: a
program that imports redundax chooses for itself.
"""

import os
from pathlib import Path

import jax

CACHE_DIR_VARIABLE = "REDUNDAX_CACHE_DIR"
"""The environment variable that names the cache folder."""

NO_CACHE_VARIABLE = "REDUNDAX_NO_CACHE"
"""The environment variable that turns the cache off (`REDUNDAX_NO_CACHE=1`)."""

HELP = (
    "Compiled programs are cached in $REDUNDAX_CACHE_DIR (default: "
    "$XDG_CACHE_HOME/redundax/jax, else ~/.cache/redundax/jax), so that the next run of "
    "a command starts sooner; REDUNDAX_NO_CACHE=1 turns the cache off, and deleting "
    "that folder clears it."
)
"""The paragraph of `redundax --help` about the cache."""


def cache_directory() -> Path | None:
    """The folder of the compilation cache, or None when the cache is off.

    `$REDUNDAX_CACHE_DIR` if set, else `$XDG_CACHE_HOME/redundax/jax`, else
    `~/.cache/redundax/jax`; None when `$REDUNDAX_NO_CACHE` is set (to anything but
    `0` or the empty string), or when no folder is named and the home folder is
    unknown.
    """
    if os.environ.get(NO_CACHE_VARIABLE, "") not in ("", "0"):
        return None
    named = os.environ.get(CACHE_DIR_VARIABLE)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = Path.home() / ".cache"
        except RuntimeError:  # no home folder
            return None
    return Path(base) / "redundax" / "jax"


def enable_compilation_cache() -> Path | None:
    """Turn on JAX's persistent compilation cache in `cache_directory`, for every
    program however small or quick to compile (the command line's programs are
    small; most of them compile in well under the second JAX requires by default).

    Call it before the first computation: JAX decides at its first compilation
    whether the process uses a cache. A folder that cannot be created or written
    leaves the cache off, silently: the cache only saves time.

    **Returns:** the cache folder, or None when the cache stays off.
    """
    directory = cache_directory()
    if directory is None:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK | os.X_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _quiet_cache_loads()
    return directory


def _quiet_cache_loads() -> None:
    """Only fatal messages of JAX's C++ runtime on stderr.

    jaxlib 0.9 and 0.10 log an ERROR line (and a warning) for every program loaded
    from the cache on x86 CPUs whose LLVM tuning flags (`+prefer-no-gather`,
    `+prefer-no-scatter`) the loader takes for missing CPU features
    (jax-ml/jax#38445, openxla/xla#44565), and load it all the same: a second
    `redundax analyze` would print some fifty such lines before its own output, and
    an error would no longer be one line.
    """
    try:
        from jaxlib import utils

        utils.absl_set_min_log_level(3)  # absl: 0 info, 1 warning, 2 error, 3 fatal
    except (ImportError, AttributeError):  # another jaxlib: its logs stay as they are
        pass
