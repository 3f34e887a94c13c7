"""The counts of a pending spec change that the Delta logs answer alone (no JVM): a retired
tier's rows, the tables a new column is added to. `waterline.engine.release.plan_counts`
adds the new and changed tiers' counts, which need Spark over held."""

from __future__ import annotations

from waterline.engine.core import columns as C
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import applied_spec
from waterline.engine.tables.added_columns import feed_tables
from waterline.spec import FeedSpec
from waterline.spec.release_part import ChangeCounts, SpecDiff


def static_counts(spec: FeedSpec, diff: SpecDiff) -> ChangeCounts:
    """The counts of ``diff`` read from the tables' logs: each retired tier's rows (None: it
    has no table), and per added column the tables `apply` adds it to (held, then each tier
    table that exists and lacks it). Nothing held yet: no counts, a note saying why."""
    if not TableLog.open(spec.held_path).exists:
        return ChangeCounts(note="not counted: nothing was ingested yet, so nothing is held or published")
    retired = {t: _rows(TableLog.open(spec.kept_tier_path(t))) for t in diff.tiers_retired}
    names = {spec.held_path: "held", **{spec.tier_path(t): t for t in spec.tiers}}
    logs = [(names[p], TableLog.open(p)) for p in feed_tables(spec)]
    have = {name: {c.lower() for c, _ in log.columns()} for name, log in logs if log.exists}
    gaining = {col: tuple(name for name, cols in have.items() if col.lower() not in cols) for col in diff.columns_added}
    return ChangeCounts(retired_rows=retired, column_tables=gaining)


def needs_spark(spec: FeedSpec, diff: SpecDiff) -> bool:
    """Whether counting ``diff`` needs Spark: a new or changed tier on a feed that has released."""
    changed = [t for t in diff.tiers_scheduled_anew if t in spec.tiers]
    return bool(changed) and TableLog.open(spec.held_path).exists and applied_spec.feed_waterline(spec) is not None


def _rows(log: TableLog) -> int | None:
    """The table's rows: from its files' statistics, else read (a column of it)."""
    if not log.exists:
        return None
    counted = log.row_count()
    return counted if counted is not None else log.to_arrow(columns=[C.SEQ]).num_rows


__all__ = ["needs_spark", "static_counts"]
