"""`SpecError`: re-exported from `waterline.errors` when it defines it.

The architecture puts `SpecError` in `waterline.errors`; until that module
declares it, the spec defines the same class here so the two stay one name.
"""

from __future__ import annotations

from waterline.errors import WaterlineError

try:
    from waterline.errors import SpecError
except ImportError:  # waterline.errors predates SpecError

    class SpecError(WaterlineError):  # type: ignore[no-redef]
        """A feed spec is invalid: ``spec <file>: <key.path>: <what is wrong>``."""


__all__ = ["SpecError", "WaterlineError"]
