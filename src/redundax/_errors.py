"""The error type of the library's own checks."""

from collections.abc import Sequence


class ModelError(ValueError):
    """An invalid mechanism, state or argument, found by redundax's own checks.

    `str(error)` is the whole message for a person. Programs (the configuration
    loader, which names the file, table and key) read its parts instead of parsing
    the text:

    - `problems`: each problem as one self-contained statement (naming the body,
      pair or field), in the order found;
    - `source`: the function that found them (e.g. `"eliminate"`), or None.
    """

    def __init__(self, message: str, problems: Sequence[str] = (), source: str | None = None):
        super().__init__(message)
        self.problems = tuple(problems) or (message,)
        self.source = source


class AccuracyWarning(UserWarning):
    """A path the user chose is known, from the structure, to lose accuracy on this
    mechanism (the message says by about how much, and what to use instead)."""
