"""Writing a file atomically: the one helper every writer of the package uses (runs,
figures, sweep chunks and summaries, design studies)."""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXISTS = "already exists; pass --force to overwrite it (force=True in Python)"
"""What is said of an output file that exists, on the command line and in Python."""

NOT_WRITABLE = "no permission to write there, or a read-only file system"
"""Why a directory cannot take new files, as the operating system tells."""


def check_directory(path: str | os.PathLike) -> Path:
    """Check, before a long computation, that files can be written in the
    directory `path`, or that it can be created (in its nearest existing parent).

    **Returns:** `path` as a `Path`.

    **Raises:** `NotADirectoryError` if `path` or the parent is a file;
    `PermissionError` naming the directory if the process may not create files
    in it (`os.access`: its permissions, or a read-only file system).
    """
    path = Path(path)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"{path}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" (it would be created in {existing})"
        raise PermissionError(
            f"{existing}: cannot write in this directory{where}: {NOT_WRITABLE}; "
            "choose another output directory"
        )
    return path


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except PermissionError:
        # Name the directory, not the temporary file nobody asked for.
        raise PermissionError(
            f"{path.parent}: cannot write {path.name} there: {NOT_WRITABLE}"
        ) from None
    try:
        # mkstemp makes the file private (0600); the result gets the permissions
        # any new file of the user's gets (0666 less the umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w" if text else "wb", **({"newline": ""} if text else {})) as file:
            yield file
        if force:
            os.replace(temporary, path)
        else:
            # A hard link fails if `path` appeared meanwhile: no silent overwrite.
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise FileExistsError(f"{path}: {EXISTS}") from None
            except OSError:  # a file system without hard links
                if path.exists():
                    raise FileExistsError(f"{path}: {EXISTS}") from None
                os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
