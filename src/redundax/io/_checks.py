"""Value checks of the input files: one copy for configurations, sweep files and
design files.

A check takes `(value, where, problems)` and returns the parsed value, or None after
recording a [`Problem`][redundax.io._errors.Problem] at `where` in `problems`. The
table helpers read a TOML file and report unknown keys with the closest allowed one.
"""

import difflib
import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._spatial_body import check_inertia, check_rotation
from ._errors import ConfigError, Problem, Where

Check = Callable[[Any, Where, list[str]], Any]
"""The signature of a value check."""


# ---------------------------------------------------------------------- messages
def describe(value: Any) -> str:
    """A value and its TOML type, for messages."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return f"an array of length {len(value)}"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    text = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{text} ({kinds.get(type(value), type(value).__name__)})"


def shown(text: str) -> str:
    """`text` as a message shows it: itself when printable, else its `repr` (a
    newline in a name must not break an error line in two)."""
    return text if text.isprintable() else repr(text)


def suggest(key: str, choices: Sequence[str], label: str = "allowed") -> str:
    """`(did you mean 'mass'? allowed: ...)` for a misspelt key or name."""
    close = difflib.get_close_matches(key, choices, n=1)
    did_you_mean = f"did you mean {close[0]!r}? " if close else ""
    return f"({did_you_mean}{label}: {', '.join(shown(c) for c in choices)})"


# ------------------------------------------------------------------------ tables
def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The parsed TOML document of `path`.

    **Raises:** [`ConfigError`][redundax.io.ConfigError] naming the file: no such
    file, a directory (`what`: the kind of file expected, e.g. "a sweep file"), a
    TOML syntax error (with its line), not UTF-8 text, arrays or tables nested
    too deeply for the parser. A UTF-8 byte-order mark (what some Windows editors
    write) is accepted.
    """
    try:
        text = path.read_bytes().decode("utf-8")
        return tomllib.loads(text.removeprefix("\ufeff"))
    except RecursionError:
        raise ConfigError(path, ["arrays or tables nested too deeply to read"]) from None
    except FileNotFoundError:
        raise ConfigError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise ConfigError(path, [f"is a directory, not {what}"]) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, [f"TOML syntax error: {err}"]) from None
    except UnicodeDecodeError:
        raise ConfigError(path, ["not a text file (TOML files are UTF-8)"]) from None


def unknown_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> list[str]:
    """One problem per key of `table` not in `allowed`, with the closest allowed key."""
    return [
        Problem(where, f"unknown key {key!r} {suggest(key, allowed)}")
        for key in table
        if key not in allowed
    ]


def read_table(path: Path, name: str, missing: str, what: str) -> dict[str, Any]:
    """The table `[name]` of the TOML file `path`, the only top-level key allowed
    (the sweep and design files).

    **Raises:** `ConfigError` naming the file: those of `read_toml`, other
    top-level keys, or no `[name]` table (`missing`: how to write one).
    """
    document = read_toml(path, what)
    problems = unknown_keys(document, (name,), "top level")
    table = document.get(name)
    if not isinstance(table, dict):
        problems.append(Problem("top level", f"no [{name}] table; {missing}"))
    if problems:
        raise ConfigError(path, problems)
    return table


def referenced_file(path: Path, table: str, name: str, key: str = "mechanism") -> Path:
    """The file that the key `[table] key = "name"` of the file `path` names (a
    mechanism configuration, relative to the folder of `path`).

    **Raises:** `ConfigError` naming `path`, the table and the key when the file does
    not exist or is a directory (the mechanism file's own problems are reported by its
    loader, naming that file).
    """
    target = path.parent / name
    relative = f"{name!r} is relative to the folder of {path.name}"
    if not target.exists():
        problem = f"no such file {str(target)!r} ({relative})"
    elif target.is_dir():
        problem = f"{str(target)!r} is a directory, not a mechanism configuration ({relative})"
    else:
        return target
    raise ConfigError(path, [Problem(Where(table, key), problem)])


# ------------------------------------------------------------------------ values
def is_number(value: Any) -> bool:
    """A TOML integer or float (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """A TOML integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def number(value: Any, where: Where, problems: list[str]) -> float | None:
    if not is_number(value):
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = "; write the number without quotes"
            except ValueError:
                pass
        problems.append(Problem(where, f"expected a number, got {describe(value)}{hint}"))
        return None
    if not math.isfinite(value):
        problems.append(Problem(where, f"must be finite, got {value}"))
        return None
    return float(value)


def positive(value: Any, where: Where, problems: list[str]) -> float | None:
    x = number(value, where, problems)
    if x is not None and x <= 0.0:
        problems.append(Problem(where, f"must be positive, got {x}"))
        return None
    return x


def non_negative(value: Any, where: Where, problems: list[str]) -> float | None:
    x = number(value, where, problems)
    if x is not None and x < 0.0:
        problems.append(Problem(where, f"must be zero or positive, got {x}"))
        return None
    return x


def lever_arms(value: Any, where: Where, problems: list[str]) -> dict[str, float] | None:
    """A table `{ "reaction component" = lever arm }` of numbers ≥ 0 (joint friction's
    load inputs; which names a joint offers is checked when the mechanism is built)."""
    if not isinstance(value, dict):
        problems.append(
            Problem(
                where,
                'expected a table { "radial force" = 0.01, ... } (input = lever arm), '
                f"got {describe(value)}",
            )
        )
        return None
    arms = {}
    for key, arm in value.items():
        x = non_negative(arm, where.entry(str(key)), problems)
        if x is None:
            return None
        arms[str(key)] = x
    return arms


def gain(value: Any, where: Where, problems: list[str]) -> float | None:
    """A Baumgarte gain [1/s]: zero or positive, and small enough that its square
    (β² multiplies Φ) is a finite number."""
    x = non_negative(value, where, problems)
    if x is not None and not math.isfinite(x * x):
        problems.append(Problem(where, f"too large: its square must be a finite number, got {x}"))
        return None
    return x


def numbers(value: Any, where: Where, problems: list[str]) -> np.ndarray | None:
    if not isinstance(value, list) or not value:
        problems.append(
            Problem(where, f"expected a non-empty array of numbers, got {describe(value)}")
        )
        return None
    out = [number(v, where.item(k), problems) for k, v in enumerate(value)]
    return None if None in out else np.asarray(out, dtype=float)


def vector(value: Any, where: Where, problems: list[str]) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        problems.append(
            Problem(where, f"expected a vector [x, y] of 2 numbers, got {describe(value)}")
        )
        return None
    out = numbers(value, where, problems)
    return None if out is None else (float(out[0]), float(out[1]))


def direction(value: Any, where: Where, problems: list[str]) -> tuple[float, float] | None:
    v = vector(value, where, problems)
    if v is not None and v == (0.0, 0.0):
        problems.append(
            Problem(where, "must be a non-zero vector (it is normalised to unit length)")
        )
        return None
    return v


def vector3(value: Any, where: Where, problems: list[str]) -> tuple[float, float, float] | None:
    if not isinstance(value, list) or len(value) != 3:
        problems.append(
            Problem(where, f"expected a vector [x, y, z] of 3 numbers, got {describe(value)}")
        )
        return None
    out = numbers(value, where, problems)
    return None if out is None else (float(out[0]), float(out[1]), float(out[2]))


def direction3(value: Any, where: Where, problems: list[str]) -> tuple[float, float, float] | None:
    v = vector3(value, where, problems)
    if v is not None and v == (0.0, 0.0, 0.0):
        problems.append(
            Problem(where, "must be a non-zero vector (it is normalised to unit length)")
        )
        return None
    return v


def non_negative3(
    value: Any, where: Where, problems: list[str]
) -> tuple[float, float, float] | None:
    """Three numbers ≥ 0 (diagonal stiffness or damping along three axes)."""
    v = vector3(value, where, problems)
    if v is not None and min(v) < 0.0:
        problems.append(Problem(where, f"every component must be zero or positive, got {list(v)}"))
        return None
    return v


class _Collector:
    """The `add` interface of the library's checks, appending to a problem list."""

    def __init__(self, problems: list[str]):
        self.problems = problems

    def add(self, message: str) -> None:
        self.problems.append(message)


def matrix3(value: Any, where: Where, problems: list[str]) -> np.ndarray | None:
    shape = "a 3 × 3 matrix written as its 3 rows, [[a, b, c], [d, e, f], [g, h, i]]"
    if not isinstance(value, list) or len(value) != 3:
        problems.append(Problem(where, f"expected {shape}, got {describe(value)}"))
        return None
    before = len(problems)
    rows = []
    for k, row in enumerate(value):
        if not isinstance(row, list) or len(row) != 3:
            problems.append(
                Problem(where.item(k), f"expected a row of 3 numbers, got {describe(row)}")
            )
            continue
        rows.append(numbers(row, where.item(k), problems))
    return None if len(problems) > before else np.asarray(rows, dtype=float)


def rotation(value: Any, where: Where, problems: list[str]) -> tuple[tuple[float, ...], ...] | None:
    R = matrix3(value, where, problems)
    if R is None:
        return None
    before = len(problems)
    check_rotation(_Collector(problems), R, str(where))
    return None if len(problems) > before else tuple(tuple(float(x) for x in r) for r in R)


def inertia3(value: Any, where: Where, problems: list[str]) -> Any:
    """Principal moments `[Ixx, Iyy, Izz]`, or a symmetric 3 × 3 tensor."""
    if isinstance(value, list) and len(value) == 3 and not any(isinstance(v, list) for v in value):
        arr = numbers(value, where, problems)
    elif isinstance(value, list) and len(value) == 3:
        arr = matrix3(value, where, problems)
    else:
        problems.append(
            Problem(
                where,
                "expected 3 principal moments [Ixx, Iyy, Izz] or a 3 × 3 tensor "
                f"(3 rows of 3 numbers), got {describe(value)}",
            )
        )
        return None
    if arr is None:
        return None
    before = len(problems)
    check_inertia(_Collector(problems), arr, str(where))
    if len(problems) > before:
        return None
    return tuple(arr.tolist()) if arr.ndim == 1 else tuple(tuple(r) for r in arr.tolist())


def name(value: Any, where: Where, problems: list[str]) -> str | None:
    if not isinstance(value, str) or not value:
        problems.append(Problem(where, f"expected a non-empty string, got {describe(value)}"))
        return None
    if not value.isprintable():
        problems.append(Problem(where, f"must be printable (no newline, tab, ...), got {value!r}"))
        return None
    return value


def integer(value: Any, where: Where, problems: list[str]) -> int | None:
    if not is_integer(value):
        problems.append(Problem(where, f"expected an integer, got {describe(value)}"))
        return None
    return value


def dimension(value: Any, where: Where, problems: list[str]) -> int | None:
    k = integer(value, where, problems)
    if k is not None and k not in (2, 3):
        problems.append(Problem(where, f"must be 2 (planar) or 3 (spatial), got {k}"))
        return None
    return k


MAX_SAVED_STATES = 10_000_000
"""The most saved states a run may ask for (`n_save`): each is 2 n_q float64 numbers
plus the reactions, so more is no trajectory anyone can hold in memory."""

MAX_STEPS = 1_000_000_000
"""The largest `max_steps` (a billion steps is days of integration; the integrator
counts steps in 64-bit integers, and larger numbers overflow them)."""


def save_count(value: Any, where: Where, problems: list[str]) -> int | None:
    k = integer(value, where, problems)
    if k is not None and k < 2:
        problems.append(
            Problem(where, f"must be at least 2 (the initial and the final state), got {k}")
        )
        return None
    if k is not None and k > MAX_SAVED_STATES:
        problems.append(Problem(where, f"must be at most {MAX_SAVED_STATES:,}, got {k:,}"))
        return None
    return k


def positive_integer(value: Any, where: Where, problems: list[str]) -> int | None:
    k = integer(value, where, problems)
    if k is not None and k < 1:
        problems.append(Problem(where, f"must be a positive integer, got {k}"))
        return None
    return k


def step_count(value: Any, where: Where, problems: list[str]) -> int | None:
    """`max_steps`: a positive integer, at most `MAX_STEPS`."""
    k = positive_integer(value, where, problems)
    if k is not None and k > MAX_STEPS:
        problems.append(Problem(where, f"must be at most {MAX_STEPS:,}, got {k:,}"))
        return None
    return k


def boolean(value: Any, where: Where, problems: list[str]) -> bool | None:
    if not isinstance(value, bool):
        problems.append(Problem(where, f"expected true or false, got {describe(value)}"))
        return None
    return value


def projection(value: Any, where: Where, problems: list[str]) -> bool | str | None:
    """`true`/`false` (a projection at every saved state, or none) or `"steps"` (a
    projection after every integrator step)."""
    if isinstance(value, bool) or value == "steps":
        return value
    problems.append(Problem(where, f'expected true, false or "steps", got {describe(value)}'))
    return None


def pivots(value: Any, where: Where, problems: list[str]) -> str | None:
    """The block solver's pivot metric: "mass" or "coordinates"."""
    if value in ("mass", "coordinates"):
        return value
    problems.append(Problem(where, f'expected "mass" or "coordinates", got {describe(value)}'))
    return None


def rows(value: Any, where: Where, problems: list[str]) -> tuple[int, ...] | None:
    if not isinstance(value, list) or not value:
        problems.append(
            Problem(
                where,
                "expected a non-empty array of row numbers (1-based), such as [6, 21], "
                f"got {describe(value)}",
            )
        )
        return None
    out = [integer(v, where.item(k), problems) for k, v in enumerate(value)]
    if None in out:
        return None
    if any(r < 1 for r in out):
        problems.append(Problem(where, f"rows are numbered from 1, got {out}"))
        return None
    if len(set(out)) != len(out):
        problems.append(Problem(where, f"duplicate rows in {out}"))
        return None
    return tuple(out)


def stiffness(value: Any, where: Where, problems: list[str]) -> Any:
    """A positive number, or [force rows, moment rows] of two."""
    if isinstance(value, list):
        parsed = [positive(v, where, problems) for v in value]
        if len(value) != 2:
            problems.append(
                Problem(
                    where,
                    f"expected a stiffness or [force rows, moment rows], got {len(value)} numbers",
                )
            )
            return None
        return None if None in parsed else (parsed[0], parsed[1])
    return positive(value, where, problems)


def pair_stiffness(value: Any, where: Where, problems: list[str]) -> Any:
    """A table {pair: stiffness or [one per row]}."""
    if not isinstance(value, dict):
        problems.append(
            Problem(where, f"expected a table {{ PAIR = stiffness, ... }}, got {describe(value)}")
        )
        return None
    out = {}
    for pair, k in value.items():
        if isinstance(k, list):
            ks = [positive(v, where.entry(pair), problems) for v in k]
            out[pair] = None if None in ks else tuple(ks)
        else:
            out[pair] = positive(k, where.entry(pair), problems)
    return None if None in out.values() else out
