"""`airflow dags test` of a feed's ingest and release DAGs on a real Airflow (temporary
AIRFLOW_HOME, SQLite): the release task defers to `WaterlineDueTrigger`, which Airflow
runs inline, and the tiers equal `waterline.semantics` after each release.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time

import pytest

from tests.airflow.feed import (
    ARMED_OR_LATE,
    FIRST_ROWS,
    LAST_PARTITION,
    PARTITION,
    SECOND,
    assert_tiers_match_oracle,
    due_after,
    due_row,
    load,
    oracle,
    write_failing_feed,
    write_feed,
)
from tests.airflow.home import BIN, AirflowHome
from tests.engine import feedkit
from waterline.clock import SystemClock, format_instant
from waterline.engine.timeliness import appearances

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

LEAD = 20  # the trigger fires this long before the due moment; the task starts Spark and waits
# A release DAG that does not defer: it releases to the clock at once, due or not.
RELEASE_NOW = """
from datetime import datetime, timezone

from airflow.sdk import DAG

from waterline.airflow import WaterlineReleaseOperator
from waterline.spec import load_spec

with DAG("f_release_now", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=timezone.utc), catchup=False):
    WaterlineReleaseOperator(task_id="release", spec=load_spec({spec!r}), deferrable=False)
"""


def test_dags_test_ingests_then_a_deferred_release_fires_at_the_due_moment(tmp_path):
    feeds = write_feed(tmp_path, lead_seconds=LEAD)
    failing = write_failing_feed(tmp_path)
    airflow = AirflowHome(tmp_path, feeds, dag_kwargs='release_options={"idle_seconds": 600}',
                          dag_code=RELEASE_NOW.format(spec=str(feeds / "f.yaml")))
    airflow.migrate()
    spec = load(tmp_path)

    # A manual run names its partition by its logical date.
    started = time.monotonic()
    ingest = airflow.cli("dags", "test", "f_ingest", PARTITION)
    ingest_seconds = time.monotonic() - started
    assert "f/2026-01-05: read 2 rows, wrote 2 versions" in ingest.stdout + ingest.stderr

    # Something is due now: the task releases at once, without deferring.
    first = airflow.cli("dags", "test", "f_release")
    assert "Trigger completed" not in first.stdout + first.stderr
    w_first = assert_tiers_match_oracle(spec, oracle([(PARTITION, FIRST_ROWS)]))

    # A row due after one more ingest (timed like the first) and the lead: ingested now.
    due = due_after(ingest_seconds, steps=1.5, lead_seconds=LEAD)
    later = [due_row(due)]
    feedkit.write_partition(tmp_path, LAST_PARTITION, later)
    airflow.cli("dags", "test", "f_ingest", LAST_PARTITION)
    ahead = (due - SystemClock().now_us()) / SECOND
    assert ahead > LEAD, f"the ingest took longer than 1.5x the first ({ingest_seconds:.0f} s): {ahead:.0f} s left"

    # Nothing due now: the task defers, the trigger (inline here) fires within the lead,
    # the task resumes, starts Spark and waits on the clock for the moment.
    second = airflow.cli("dags", "test", "f_release", timeout=ahead + 600)
    out = second.stdout + second.stderr
    assert "Trigger completed" in out, out[-4000:]
    # Pre-armed (Spark up before the moment), or, on a loaded machine, late and released at once.
    assert re.search(ARMED_OR_LATE, out), out[-4000:]
    assert f"after the due moment {format_instant(due)}" in out, out[-4000:]
    w_second = assert_tiers_match_oracle(spec, oracle([(PARTITION, FIRST_ROWS), (LAST_PARTITION, later)]))
    assert w_second["emb"] >= due
    soon = [a for a in appearances(spec, "emb", lambda r: due if r["id"] == 1 else None) if a.row["id"] == 1]
    assert len(soon) == 1 and not soon[0].early, soon
    lag = (soon[0].commit_us - due) / SECOND
    print(f"first ingest {ingest_seconds:.1f} s; row committed {lag:.3f} s after its due moment")

    # Each run emitted asset events: the held table's with its partitions, one per tier with W_T.
    with sqlite3.connect(airflow.home / "airflow.db") as db:
        events = db.execute(
            "SELECT a.name, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id ORDER BY e.id"
        ).fetchall()
    by_asset: dict[str, list[dict]] = {}
    for name, extra in events:
        by_asset.setdefault(name, []).append(json.loads(extra))
    assert [e["partitions"] for e in by_asset["f/held"]] == [[PARTITION], [LAST_PARTITION]]
    assert [e["w_us"] for e in by_asset["f/emb"]] == [w_first["emb"], w_second["emb"]]
    assert [e["released"] for e in by_asset["f/emb"]] == [1, 1]
    assert by_asset["f/d10"][-1]["w_us"] == w_second["d10"]
    assert 0 <= lag < 600

    # deferrable=False: nothing is due (the next row in 2099), the task neither defers nor
    # waits; W_T moves to the clock, the tiers keep their rows (the oracle at the new W_T).
    before = SystemClock().now_us()
    now = airflow.cli("dags", "test", "f_release_now")
    out = now.stdout + now.stderr
    assert "Trigger" not in out and "pre-armed" not in out and "DEFERRED" not in out, out[-4000:]
    w_now = assert_tiers_match_oracle(spec, oracle([(PARTITION, FIRST_ROWS), (LAST_PARTITION, later)]))
    assert all(w >= before for w in w_now.values()), (w_now, before)
    assert "f/emb: W_T " in out and "released 0" in out, out[-4000:]

    # A feed whose transform fails on its data: the task fails at once (no retry) with the
    # CLI's one line in the task log, and no Spark/py4j chain behind it.
    bad = airflow.cli("dags", "test", "g_ingest", PARTITION, check=False)
    out = bad.stdout + bad.stderr
    cli = subprocess.run([str(BIN / "waterline"), "ingest", str(failing), "--partition", PARTITION],
                         capture_output=True, text=True, timeout=600)
    line = cli.stderr.strip()
    assert cli.returncode == 2 and line.startswith("error: feed g: partition 2026-01-05: [CAST_INVALID_INPUT]"), line
    message = line.removeprefix("error: ")
    assert f"AirflowFailException: {message}" in out, out[-4000:]
    assert "Py4JJavaError" not in out and "at org.apache.spark" not in out
    assert bad.returncode == 1 and "DagRun failed" in out
