"""The one exception type users see: a single actionable line."""

from __future__ import annotations


class WaterlineError(Exception):
    """An error a user can act on. ``str(err)`` is one line naming what is at fault."""

    def __init__(self, message: str) -> None:
        # One line, always: multi-line messages turn into unreadable CLI output.
        super().__init__(" ".join(str(message).split()))
