"""`airflow dags test` of a feed's audit DAG on a real Airflow (temporary AIRFLOW_HOME, SQLite).

The feed is ingested and released by its own DAGs (a release DAG with ``deferrable=False``:
no due moment to wait for, so nothing here depends on how fast a loaded machine is); the
audit DAG then proves every release on time, and its next run, starting where the first
ended (its XCom), proves only the commits since: none.
"""

from __future__ import annotations

import re

import pytest

from tests.airflow.feed import PARTITION, load, write_feed
from tests.airflow.home import AirflowHome
from tests.airflow.test_dags_test import RELEASE_NOW

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

PROVED = re.compile(r"audit f/(\w+): (\d+) commits, (\d+) rows released, least margin [^,]+, (\d+) breaches")


def test_the_audit_dag_proves_the_releases_then_only_what_came_since(tmp_path):
    feeds = write_feed(tmp_path, lead_seconds=20)
    airflow = AirflowHome(tmp_path, feeds, dag_code=RELEASE_NOW.format(spec=str(feeds / "f.yaml")))
    airflow.migrate()
    spec = load(tmp_path)
    airflow.cli("dags", "test", "f_ingest", PARTITION)
    airflow.cli("dags", "test", "f_release_now")

    first = airflow.cli("dags", "test", "f_audit")
    out = first.stdout + first.stderr
    proved = {tier: (int(commits), int(rows), int(breaches)) for tier, commits, rows, breaches in PROVED.findall(out)}
    assert set(proved) == set(spec.tiers), out[-4000:]
    assert all(commits >= 1 and breaches == 0 for commits, _, breaches in proved.values()), proved
    assert proved["emb"][1] == 1  # FIRST_ROWS: one row due at once, one in 2099
    assert "BREACH" not in out and "not proven" not in out, out[-4000:]

    again = airflow.cli("dags", "test", "f_audit")
    out = again.stdout + again.stderr
    assert {tier: int(commits) for tier, commits, _, _ in PROVED.findall(out)} == {tier: 0 for tier in spec.tiers}, \
        out[-4000:]
    assert airflow.task_tries("f_audit") == [(1, "success"), (1, "success")]
