"""`airflow dags test` of a feed's ingest and release DAGs on a real Airflow (temporary
AIRFLOW_HOME, SQLite): the first ingest meets a busy feed lease and succeeds on Airflow's
retry, the release task defers to `WaterlineDueTrigger`, which Airflow runs inline, the
tiers equal `waterline.semantics` after each release, the audit DAG proves the releases
on time and its next run proves only what came since, and a feed failing on its data fails
at once although its task has retries.
"""

from __future__ import annotations

import re
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
from tests.airflow.home import AirflowHome
from tests.dagster.deploy import wait_for
from tests.engine import feedkit
from waterline import Feed
from waterline.clock import SystemClock, format_instant
from waterline.engine.tables.lease import feed_lease
from waterline.engine.proof.timeliness import appearances
from waterline.errors import WaterlineError
from waterline.spec import load_spec

pytestmark = [pytest.mark.spark, pytest.mark.e2e, pytest.mark.heavy(6)]

PROVED = re.compile(r"audit f/(\w+): (\d+) commits, (\d+) rows released, least margin [^,]+, (\d+) breaches")
LEAD = 20  # the trigger fires this long before the due moment; the task starts Spark and waits
# Every task may retry once, RETRY_DELAY s after a failed try; a task waits LEASE_WAIT s for a busy lease.
RETRY_DELAY, LEASE_WAIT = 5, 3
# A release DAG that does not defer: it releases to the clock at once, due or not.
RELEASE_NOW = """
from datetime import datetime, timezone

from airflow.sdk import DAG

from waterline.airflow import WaterlineReleaseOperator
from waterline.spec import load_spec

with DAG("f_release_now", schedule=None, start_date=datetime(2026, 1, 1, tzinfo=timezone.utc), catchup=False):
    WaterlineReleaseOperator(task_id="release", spec=load_spec({spec!r}), deferrable=False)
"""


def test_dags_test_ingests_then_a_deferred_release_fires_at_the_due_moment(spark, tmp_path):
    feeds = write_feed(tmp_path, lead_seconds=LEAD)
    failing = write_failing_feed(tmp_path)
    airflow = AirflowHome(tmp_path, feeds, dag_kwargs='release_options={"idle_seconds": 600}, '
                          f'default_args={{"retries": 1, "retry_delay": {RETRY_DELAY}}}',
                          dag_code=RELEASE_NOW.format(spec=str(feeds / "f.yaml")))
    airflow.migrate()
    spec = load(tmp_path)

    # A manual run names its partition by its logical date. The feed is busy (its lease held
    # here, as a Dagster run or a CLI release would hold it): the task's first try gives up
    # waiting for the lease (LeaseBusy, a transient error); its retry, once the lease is free,
    # ingests.
    started = time.monotonic()
    with feed_lease(spec.feed_dir, feed=spec.feed, timeout_s=10):
        run = airflow.start("dags", "test", "f_ingest", PARTITION, env={"WATERLINE_LEASE_WAIT_S": str(LEASE_WAIT)})
        wait_for(lambda: _first_try_failed(airflow, run), timeout=600, interval=0.2,
                 what="the ingest's first try to fail on the busy lease")
    out = airflow.finish(run)
    ingest_seconds = time.monotonic() - started - LEASE_WAIT - RETRY_DELAY  # as long as one ingest
    assert "f/2026-01-05: read 2 rows, wrote 2 versions" in out
    assert "LeaseBusy: feed f: busy, lease" in out and "(transient: the task's retries apply)" in out, out[-4000:]
    assert airflow.task_tries("f_ingest") == [(2, "success")]

    # Something is due now: the task releases at once, without deferring.
    first = airflow.cli("dags", "test", "f_release")
    assert "Trigger completed" not in first.stdout + first.stderr
    w_first = assert_tiers_match_oracle(spec, oracle([(PARTITION, FIRST_ROWS)]))

    # The audit DAG proves every release so far on time (the cursor it leaves is its XCom).
    proved = _audit(airflow)
    assert set(proved) == set(spec.tiers), proved
    assert all(commits >= 1 and breaches == 0 for commits, _, breaches in proved.values()), proved
    assert proved["emb"][1] == 1  # FIRST_ROWS: one row due at once, one in 2099

    # A row due after one more ingest (timed like the first) and the lead: ingested now.
    # 2.5 ingests of room: a full `make test` beside other load once took 1.6x the first (stop 31)
    due = due_after(ingest_seconds, steps=2.5, lead_seconds=LEAD)
    later = [due_row(due)]
    feedkit.write_partition(tmp_path, LAST_PARTITION, later)
    airflow.cli("dags", "test", "f_ingest", LAST_PARTITION)
    ahead = (due - SystemClock().now_us()) / SECOND
    assert ahead > LEAD, f"the ingest took longer than 2.5x the first ({ingest_seconds:.0f} s): {ahead:.0f} s left"

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
    by_asset = airflow.asset_events()
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

    # The audit's next run starts where the first ended: only the releases since, the row due
    # at the deferred release's moment among them, all on time.
    proved = _audit(airflow)
    assert set(proved) == set(spec.tiers) and all(b == 0 for _, _, b in proved.values()), proved
    assert proved["emb"][1] == 1 and proved["emb"][0] >= 1, proved
    assert airflow.task_tries("f_audit") == [(1, "success"), (1, "success")]

    # A feed whose transform fails on its data: the task fails at once (no retry, although it
    # has one) with the CLI's one line in the task log, and no Spark/py4j chain behind it.
    bad = airflow.cli("dags", "test", "g_ingest", PARTITION, check=False)
    out = bad.stdout + bad.stderr
    assert airflow.task_tries("g_ingest") == [(1, "failed")]
    # The CLI prints the same error as `error: <message>` (tests/cli/test_bad_input.py): here
    # the message comes from this process's session, not from a second driver.
    with pytest.raises(WaterlineError) as failed:
        Feed(load_spec(failing), spark=spark).ingest(PARTITION)
    message = str(failed.value)
    assert message.startswith("feed g: partition 2026-01-05: [CAST_INVALID_INPUT]"), message
    assert f"AirflowFailException: {message}" in out, out[-4000:]
    assert "Py4JJavaError" not in out and "at org.apache.spark" not in out
    assert bad.returncode == 1 and "DagRun failed" in out


def _audit(airflow: AirflowHome) -> dict[str, tuple[int, int, int]]:
    """One `airflow dags test` of the audit DAG: per tier (commits, rows released, breaches)."""
    run = airflow.cli("dags", "test", "f_audit")
    out = run.stdout + run.stderr
    assert "BREACH" not in out and "not proven" not in out, out[-4000:]
    return {tier: (int(commits), int(rows), int(breaches)) for tier, commits, rows, breaches in PROVED.findall(out)}


def _first_try_failed(airflow: AirflowHome, run: subprocess.Popen) -> bool:
    """True once the ingest's first try is up for retry; fails if ``run`` ended before."""
    if run.poll() is not None:
        raise AssertionError(f"airflow dags test ended ({run.returncode}) before a retry: "
                             f"{run.output.read_text(errors='replace')[-4000:]}")
    return airflow.task_tries("f_ingest") == [(1, "up_for_retry")]
