"""Where a stream micro-batch's seconds go (`python -m bench.stream_phases`).

`bench.stream` and `bench.stream_latency` give totals; this one times the engine's phases
inside one process (the functions below wrapped with a timer, nothing else changed) for
either a drain of N records (``--drain N``, one micro-batch, as `bench.stream` runs it) or
a continuous run at a steady rate (``--rate R --seconds S``, as `bench.stream_latency`
runs it, with its producer and spec). It prints each phase's mean and max seconds per
batch: what to look at before changing the batch path.

Phases: ingest = decode + check (a small batch: `collect_rows`, its one job: Kafka read,
parse, transform, tags; then `small_batch` on the driver; a large one: `write_large`, its
one pass: Kafka read, parse, counts, collapse, diff against held, files), quarantine
(`_quarantine`), versions written (`write`: files), commit (`_commit`); release = stage
(`stage`: the tiers' outlook and each tier's changes and files) + commit (`commit_staged`).

Usage: python -m bench.stream_phases [--drain 300000 | --rate 5000 --seconds 120] [--detail]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.probes import Phases, loadavg  # noqa: E402

#: Functions timed (`probes.Phases` targets); each label (module.function) is a row of the report.
PHASES = {
    "waterline.engine.stream_run": ["ingest_batch", "release"],
    "waterline.engine.ingest.stream.batch": ["_create_held", "_quarantine", "_commit"],
    "waterline.engine.ingest.stream.batch_write": ["checked", "write_large", "write"],
    "waterline.engine.release.release": ["stage", "commit_staged"],
    "waterline.engine.release.prestage": ["tier_outlook", "_stage_tier", "_stage_small", "stage_tier"],
    "waterline.engine.release.step_files": ["stage_tier"],
}

#: With ``--detail``: where inside those phases (Spark runs lazily, so its work shows under
#: the call that triggers it: a write, a collect, a footer read).
DETAIL = {
    "waterline.engine.ingest.stream.batch": ["batch_output", "_prepare", "compile_tiers", "table_schema",
                                             "collect_rows", "small_batch"],
    "waterline.engine.ingest.stream.small_batch": ["current_versions", "batch_counts", "last_records", "batch_versions"],
    "waterline.engine.ingest.held_append": ["write_parquet", "write_partitioned_arrow", "written_files"],
    "waterline.engine.ingest.versions": ["observed_counts"],
    "waterline.engine.release.prestage": ["_read", "read_local", "step_outlook", "plan_step", "_stage_inserts",
                                       "_write_files", "write_parquet", "change_actions"],
    "waterline.engine.release.step_files": ["desired_rows", "read_files", "tier_changes", "write_partitioned",
                                          "inserts_staged", "change_actions"],
    "waterline.engine.stream_run": ["_release_after", "batch_bound"],
    "waterline.engine.delta.table_log:TableLog": ["held_state", "held_files", "tier_state"],
}


def phases_for(detail: bool) -> Phases:
    """The phases to time (with ``detail``: and the calls inside them)."""
    targets = {m: list(names) for m, names in PHASES.items()}
    for module, names in (DETAIL.items() if detail else ()):
        targets[module] = targets.get(module, []) + names
    return Phases(targets)


def drain(records: int, root: Path, times: dict[str, list[float]]) -> dict:
    """One warm-up drain of 2,000 records, then ``records`` drained and timed."""
    from bench.stream import TRANSFORM, _produce, _spec
    from waterline import Feed
    from waterline.local import kafka_broker
    from waterline.engine.spark.session import get_session
    from waterline.spec import spec_from_dict

    state = kafka_broker.start(root / "kafka")
    spark = get_session()
    try:
        for label, n in (("warm-up", 2000), ("measured", records)):
            topic = f"phases-{label}"
            kafka_broker.create_topic(state.bootstrap, topic, partitions=4)
            _produce(state.bootstrap, topic, n, 4)
            kafka = {"format": "kafka", "bootstrap": state.bootstrap, "topic": topic,
                     "value": {"format": "json", "schema": "px DOUBLE, ts STRING"}}
            feed = Feed(spec_from_dict({**_spec(root / label, "s", kafka), "transform": TRANSFORM,
                                        "partition_by": "CAST(to_date(event_time) AS STRING)"}), spark=spark)
            times.clear()
            start = time.perf_counter()
            feed.stream(once=True)
            total = time.perf_counter() - start
        return {"mode": f"drain of {records:,} records", "total_s": total, "batches": 1}
    finally:
        spark.stop()
        kafka_broker.stop(root / "kafka")


def continuous(rate: int, seconds: float, root: Path, times: dict[str, list[float]]) -> dict:
    """`bench.stream_latency`'s feed and producer, the stream in this process; batches after
    the first (which creates the tables) are timed."""
    from bench.stream_latency import Producer, _spec
    from waterline import load
    from waterline.local import kafka_broker

    state = kafka_broker.start(root / "kafka")
    try:
        kafka_broker.create_topic(state.bootstrap, "ticks", partitions=1)
        producer = Producer(state.bootstrap, "ticks", rate, 50_000)
        producer.one()
        producer.producer.flush(30)
        feed = load(_spec(root, state.bootstrap, "ticks"))
        stop, first = threading.Event(), threading.Event()
        records: list[int] = []

        def on_batch(batch) -> None:
            if not first.is_set():
                times.clear()
                first.set()
            else:
                records.append(batch.records)

        runner = threading.Thread(target=feed.stream, kwargs={"once": False, "stop": stop, "on_batch": on_batch})
        runner.start()
        first.wait(600)
        producer.run(seconds)
        time.sleep(15)  # the batch carrying the last records
        stop.set()
        runner.join(300)
        return {"mode": f"continuous, {rate:,} records/s for {seconds:.0f} s", "batches": len(records),
                "records_per_batch": round(sum(records) / max(1, len(records)))}
    finally:
        kafka_broker.stop(root / "kafka")


def report(result: dict, times: dict[str, list[float]], labels: list[str]) -> str:
    lines = [f"stream phases: {result['mode']}, {result['batches']} batches timed"
             + (f" (~{result['records_per_batch']:,} records each)" if "records_per_batch" in result else "")
             + (f", {result['total_s']:.2f} s in all" if "total_s" in result else "") + f", load {loadavg()}",
             f"  {'phase':32} {'calls':>5} {'mean s':>7} {'max s':>7}"]
    for name in labels:
        values = times.get(name)
        if values:
            lines.append(f"  {name:32} {len(values):>5} {sum(values) / len(values):>7.2f} {max(values):>7.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_phases", description=__doc__.split("\n")[0])
    parser.add_argument("--drain", type=int, help="records drained in one batch (default: a continuous run)")
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--detail", action="store_true", help="also time the calls inside the phases")
    args = parser.parse_args(argv)
    phases = phases_for(args.detail)
    with tempfile.TemporaryDirectory(prefix="wl-bench-phases-") as root, phases.active():
        times = phases.calls
        if args.drain:
            result = drain(args.drain, Path(root), times)
        else:
            result = continuous(args.rate, args.seconds, Path(root), times)
    print(report(result, times, phases.labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
