"""The one error type of invalid input files, and where in a file a problem is.

A problem is reported as one line `WHERE: MESSAGE`, WHERE naming the table or entry
(`simulation`, `bodies[1] ("coupler")`, entries counted from 0) and, when a value
is wrong, its key (`bodies[1] ("coupler") key 'mass'`). The parts are kept as
fields (`Where`, `Problem`, [`ConfigError`][redundax.io.ConfigError]) so that no caller has to
parse the text.
"""

import dataclasses
import os
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Where:
    """The place of a value in a file: a table or entry, one of its keys, and the
    position inside the key's value. Shown as `TABLE key 'KEY'DETAIL`.

    **Attributes:**

    - `table`: the table or entry, e.g. `simulation`, `bodies[1] ("coupler")`,
      `pairs[3] ("drive") key 'motion'` (a table inside a key).
    - `key`: the key, or None for the table itself.
    - `detail`: the position inside the key's value, e.g. `[1]`, `[0][2]`,
      ` ('B')`; empty for the whole value.
    """

    table: str
    key: str | None = None
    detail: str = ""

    def __str__(self) -> str:
        key = "" if self.key is None else f" key {self.key!r}"
        return f"{self.table}{key}{self.detail}"

    def item(self, index: int) -> "Where":
        """The element `index` of the value (an array), shown as `...[index]`."""
        return dataclasses.replace(self, detail=f"{self.detail}[{index}]")

    def entry(self, name: str) -> "Where":
        """The entry `name` of the value (a table), shown as `... ('name')`."""
        return dataclasses.replace(self, detail=f"{self.detail} ({name!r})")


class Problem(str):
    """One problem of a file: the text `WHERE: MESSAGE` (a `str`, as shown), with its
    parts as attributes.

    **Attributes:**

    - `where`: the `Where` of the problem, or the name of its table or entry.
    - `message`: what is wrong, and the fix where there is one.
    - `table`: the table or entry.
    - `key`: the key whose value is wrong, or None when the problem is the table's
      (a missing or unknown key, a duplicate name).
    """

    where: "Where | str"
    message: str

    def __new__(cls, where: "Where | str", message: str) -> "Problem":
        self = super().__new__(cls, f"{where}: {message}")
        self.where = where
        self.message = message
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (self.where, self.message)

    @property
    def table(self) -> str:
        return self.where.table if isinstance(self.where, Where) else self.where

    @property
    def key(self) -> str | None:
        return self.where.key if isinstance(self.where, Where) else None


class ConfigError(ValueError):
    """An invalid configuration file (or sweep file, or design file).

    The message starts with one line `FILE: first problem`, which names the entry
    and the key; when there are several problems, all of them follow, one per line,
    and then the hint, if any.

    **Attributes:**

    - `path`: the file, as given.
    - `problems`: every problem found, each naming its entry and key: a
      `Problem` (with `table`, `key` and `message`) where the place is known,
      else a plain `str` (a missing file, a problem reported by the library).
    - `hint`: how to fix the whole (a line after the problems), or None.
    - `table`, `key`: those of the first problem (None when not known).
    """

    def __init__(self, path: str | os.PathLike, problems: Sequence[str], hint: str | None = None):
        self.path = str(path)
        self.problems = tuple(problems)
        self.hint = hint
        super().__init__(self._message())

    @property
    def table(self) -> str | None:
        first = self.problems[0]
        return first.table if isinstance(first, Problem) else None

    @property
    def key(self) -> str | None:
        first = self.problems[0]
        return first.key if isinstance(first, Problem) else None

    def _message(self) -> str:
        message = f"{self.path}: {self.problems[0]}"
        if len(self.problems) > 1:
            message += f" (and {len(self.problems) - 1} more problem(s), all listed below)"
            message += "".join(f"\n  - {p}" for p in self.problems)
        if self.hint is not None:
            message += f"\n{self.hint}"
        return message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problems, self.hint))
