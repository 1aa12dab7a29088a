"""Writing a file atomically: the one helper every writer of the package uses (runs,
figures, sweep chunks and summaries, design studies)."""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_write(path: Path, force: bool = False, *, text: bool = False) -> Iterator[Any]:
    """A temporary file beside `path`, moved onto it when the block succeeds.

    A reader never sees half a file: the data go to `.NAME.XXXX.tmp` in the same
    folder, which is renamed onto `path` only after the block ends without an
    exception (and deleted otherwise).

    **Arguments:**

    - `path`: the file to write; its folder must exist.
    - `force`: replace `path` if it exists. Without it, the temporary file is
      hard-linked to `path`, which fails if `path` appeared meanwhile, so nothing is
      ever overwritten silently.
    - `text`: open the temporary file in text mode (UTF-8 by the locale, no newline
      translation) instead of binary mode.

    **Returns:** a context manager giving the open temporary file.

    **Raises:** `FileExistsError` if `path` exists and `force` is False.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w" if text else "wb", **({"newline": ""} if text else {})) as file:
            yield file
        if force:
            os.replace(temporary, path)
        else:
            # A hard link fails if `path` appeared meanwhile: no silent overwrite.
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise FileExistsError(
                    f"{path}: already exists; pass force=True to overwrite it"
                ) from None
            except OSError:  # a file system without hard links
                if path.exists():
                    raise FileExistsError(
                        f"{path}: already exists; pass force=True to overwrite it"
                    ) from None
                os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
