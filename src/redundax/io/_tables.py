"""Checks shared by the files that name a mechanism file and add one table of their
own (`[sweep]` files, `[optimize]` design files): numbers, unknown keys, and reading
that one table with a message naming the file."""

import difflib
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import ConfigError


def is_number(value: Any) -> bool:
    """A TOML integer or float (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """A TOML integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def unknown_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> list[str]:
    """One problem per key of `table` not in `allowed`, with the closest allowed key."""
    out = []
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            out.append(f"{where}: unknown key {key!r} ({hint}allowed: {', '.join(allowed)})")
    return out


def read_table(path: Path, name: str, missing: str, what: str) -> dict[str, Any]:
    """The table `[name]` of the TOML file `path`, the only top-level key allowed.

    **Raises:** `ConfigError` naming the file: no such file, a directory (`what`:
    the kind of file expected), a TOML syntax error, other top-level keys, or no
    `[name]` table (`missing`: how to write one).
    """
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise ConfigError(path, [f"is a directory, not {what}"]) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, [f"TOML syntax error: {err}"]) from None
    problems = unknown_keys(document, (name,), "top level")
    table = document.get(name)
    if not isinstance(table, dict):
        problems.append(f"top level: no [{name}] table; {missing}")
    if problems:
        raise ConfigError(path, problems)
    return table
