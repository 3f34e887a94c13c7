"""Names of waterline's system columns (prefixed ``_wl_``) in held and tier tables."""

from __future__ import annotations

from typing import Sequence

PARTITION = "_wl_partition"
SEQ = "_wl_seq"
REMOVED = "_wl_removed"
HASH = "_wl_hash"
INGESTED_AT = "_wl_ingested_at"
START = "_wl_start"  # tier tables: start of the visibility interval containing W_T
END = "_wl_end"  # tier tables: end of that interval (POS_INF when open-ended)

PREFIX = "_wl_"


def vis(tier: str) -> str:
    """Held column: the tier's visibility intervals of a version."""
    return f"_wl_vis__{tier}"


def tau(tier: str) -> str:
    """Held column: the tier's takeover instant of a version."""
    return f"_wl_tau__{tier}"


def last(tier: str) -> str:
    """Held column: the version's last finite boundary for the tier (NEG_INF if none).

    A version cannot change tier T after W passes this, so releases skip every
    file whose max(last) <= W_T using Delta's file statistics.
    """
    return f"_wl_last__{tier}"


def is_system(name: str) -> bool:
    return name.startswith(PREFIX)


def added_payload(table_columns: Sequence[str]) -> list[str]:
    """The payload columns `waterline apply` added to a table, in the order added: those after
    its first system column (a table is created payload first; apply appends at the end)."""
    first = next((i for i, name in enumerate(table_columns) if is_system(name)), len(table_columns))
    return [name for name in table_columns[first:] if not is_system(name)]
