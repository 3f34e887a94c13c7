"""Duplicate identities in one partition's output: the error every duplicate-key check raises."""

from __future__ import annotations

from typing import Sequence

from waterline.errors import WaterlineError

#: Duplicate keys an error names; a check looks for one more, to say "and more".
MAX_KEYS_IN_ERROR = 10


def duplicate_keys_error(feed: str, partition: str, key: Sequence[str],
                         found: Sequence[tuple[Sequence, int]]) -> WaterlineError:
    """The one-line error for ``found``: (key values, occurrences), up to `MAX_KEYS_IN_ERROR` + 1."""
    shown = ", ".join(
        "(" + ", ".join(f"{k}={v!r}" for k, v in zip(key, values)) + f") x{count}"
        for values, count in found[:MAX_KEYS_IN_ERROR]
    )
    more = " and more" if len(found) > MAX_KEYS_IN_ERROR else ""
    return WaterlineError(
        f"feed {feed}: partition {partition}: duplicate keys {list(key)} in the output: {shown}{more}; "
        "nothing was written"
    )
