"""Which partitions an Airflow run ingests: pure functions of the spec and the run's context.

No Spark, no database, no Airflow import: unit-tested with plain values
(tests/airflow/test_partitions.py). `WaterlineIngestOperator` calls
`partitions_for_run` with its task context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from waterline.errors import WaterlineError
from waterline.spec import FeedSpec
from waterline.spec.partitions import DAILY_FORMAT, HOURLY_FORMAT


def partitions_for_run(spec: FeedSpec, context: Mapping[str, Any],
                       requested: str | Sequence[str] | None = None) -> list[str]:
    """The partition keys a run ingests, in order; the first rule that applies wins.

    1. ``requested`` (the operator's ``partitions=``): a key or a list of keys;
    2. the run conf ``{"partitions": [...]}``;
    3. a manual run (UI "Trigger", ``airflow dags trigger``/``test``): the partition
       containing its logical date (Airflow's inferred interval would be the one before);
    4. a scheduled, catch-up or backfill run: the partitions of its data interval.

    ``context`` is the task context, or any mapping with its keys (``dag_run``,
    ``logical_date``, ``data_interval_start``, ``data_interval_end``). Keys are
    validated against the scheme; a repeated key is ingested once.
    """
    dag_run = context.get("dag_run")
    wanted = requested if requested is not None else (getattr(dag_run, "conf", None) or {}).get("partitions")
    if isinstance(wanted, str):
        wanted = [wanted]
    if wanted:
        keys = []
        for key in wanted:
            try:
                keys.append(spec.partitions.validate(str(key)))
            except WaterlineError as exc:
                raise WaterlineError(f"partitions: {exc}") from None
        return sorted(set(keys), key=keys.index)
    logical = context.get("logical_date")
    run_type = getattr(dag_run, "run_type", None)
    if getattr(run_type, "value", run_type) == "manual" and logical is not None:
        return partitions_in_interval(spec, logical, logical)
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is None or end is None:
        raise WaterlineError(
            f"feed {spec.feed}: no partitions given and the run has no data interval or logical date; "
            "pass partitions=... or the run conf {\"partitions\": [...]}")
    return partitions_in_interval(spec, start, end)


def partitions_in_interval(spec: FeedSpec, start: datetime, end: datetime) -> list[str]:
    """The daily/hourly partition keys whose period starts in ``[start, end)`` (UTC);
    an empty interval (a manual run) means the partition containing ``start``."""
    scheme = spec.partitions
    if scheme.kind == "static":
        raise WaterlineError(
            f"feed {spec.feed}: static partitions do not follow time; pass partitions=... or the run conf "
            f"{{\"partitions\": [...]}} (one of {list(scheme.values)})")
    step = timedelta(days=1) if scheme.kind == "daily" else timedelta(hours=1)
    start_utc, end_utc = utc_naive(start), utc_naive(end)
    first = datetime.strptime(scheme.key_for(start_utc), DAILY_FORMAT if scheme.kind == "daily" else HOURLY_FORMAT)
    if first < start_utc:
        first += step
    keys = []
    moment = first
    while moment < end_utc:
        keys.append(scheme.validate(scheme.key_for(moment)))
        moment += step
    return keys or [scheme.validate(scheme.key_for(start_utc))]


def utc_naive(moment: datetime) -> datetime:
    """``moment`` as a naive UTC datetime (an aware one is converted; a naive one is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


__all__ = ["partitions_for_run", "partitions_in_interval", "utc_naive"]
