"""A table that is not there is an answer, not a search: every question `TableLog` and the
feed's reading of it (`feed_tables`) answer ends, for an absent table at once, for a present
one after at most the whole log.

Each question runs in a subprocess with a generous timeout: a search that never ends (the
bug of issue 53, where `rows_changed_by_others` on an absent tier spun forever) fails the
test by its timeout instead of hanging the suite. No JVM."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.engine.feedkit import make_spec
from waterline.engine.delta.table_log import APP_COMMIT, TableLog
from waterline.errors import WaterlineError

REPO = Path(__file__).resolve().parents[2]
#: Far longer than any of these questions takes: reaching it means the question never ended.
TIMEOUT_S = 120

QUESTIONS = {
    "rows_changed_by_others": ("log.rows_changed_by_others()", False),
    "latest_state": ("log.latest_state()", None),
    "states_since": ("feed_tables.states_since(log, after_seq=0)", []),
    "tier_state": ("feed_tables.tier_state(log).w", None),
    "waterline_states": ("log.waterline_states()", []),
    "history": ("log.history()", []),
    "last_ingest_state": ("feed_tables.last_ingest_state(log, 'a')", None),
    "names_token": ("feed_tables.names_token(log, 't', after=None)", False),
    "held_state": ("feed_tables.held_state(log, 'f').seq", 0),
}


def _ask(path: Path, question: str) -> object:
    """``question`` (an expression over ``log``, `TableLog.open(path)`, and ``feed_tables``) answered
    in a subprocess; its answer as JSON. Fails if the subprocess did not end within `TIMEOUT_S`."""
    code = ("import json, sys; from waterline.engine.delta.table_log import TableLog; "
            "from waterline.engine.tables import feed_tables; "
            f"log = TableLog.open(sys.argv[1]); print(json.dumps({question}))")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{question} on {path} did not end within {TIMEOUT_S}s: an unbounded search")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_an_absent_table_answers_every_question_at_once(tmp_path, name):
    question, want = QUESTIONS[name]
    assert _ask(tmp_path / "no-table-here", question) == want


def _foreign_commits(path: Path, n: int) -> None:
    """``n`` appends by another writer (deltalake), none carrying a waterline state."""
    for i in range(n):
        write_deltalake(str(path), pa.table({"x": [i]}), mode="append")


def test_a_search_through_a_log_without_waterline_commits_ends(tmp_path):
    """A table only others wrote: the search for the newest waterline commit reads deeper
    (4, 40 ...) and ends at the log's end rather than deepening for ever."""
    _foreign_commits(tmp_path / "t", 6)
    assert _ask(tmp_path / "t", "log.rows_changed_by_others()") is True
    assert _ask(tmp_path / "t", "feed_tables.states_since(log, after_seq=0)") == []
    assert _ask(tmp_path / "t", "log.latest_state()") is None


def test_a_lost_state_is_a_one_line_error_naming_the_table(tmp_path):
    """A waterline commit is known (its transaction) but no state anywhere in the log: the
    search reads the whole log and then says so, naming the table, instead of searching on."""
    path = tmp_path / "t"
    _foreign_commits(path, 2)
    write_deltalake(str(path), pa.table({"x": [9]}), mode="append",
                    commit_properties=_transaction(APP_COMMIT, 3))
    log = TableLog.open(str(path))
    with pytest.raises(WaterlineError) as raised:
        log.latest_state()
    message = str(raised.value)
    assert "\n" not in message and str(path) in message and "state lost" in message


def _transaction(app: str, version: int):
    from deltalake import CommitProperties, Transaction

    return CommitProperties(app_transactions=[Transaction(app_id=app, version=version)])


def test_no_spark_writer_warning_for_a_table_not_there_yet(tmp_path, caplog):
    """The first ingest of a feed: held does not exist, so nothing was "written by Spark's
    Delta writer"; the warning is for tables that exist and need Spark's writer."""
    from pyspark.sql.types import LongType, StructField, StructType

    from waterline.engine.ingest.held_append import direct_unsupported

    with caplog.at_level(logging.WARNING, logger="waterline.engine.delta.gate"):
        reason = direct_unsupported(TableLog.open(str(tmp_path / "held")), StructType([StructField("x", LongType())]))
    assert reason == "no table"
    assert "not waterline's" not in caplog.text


def test_reading_a_missing_tier_of_a_stream_feed_says_to_run_the_stream(tmp_path):
    from tests.streams.kafkakit import stream_spec
    from waterline import load

    feed = load(stream_spec(tmp_path, "127.0.0.1:9", "quotes"))
    with pytest.raises(WaterlineError) as raised:
        feed.read("realtime")
    message = str(raised.value)
    assert "waterline stream" in message and "--once" in message and "ingest a partition" not in message
    assert "\n" not in message


def test_reading_a_missing_tier_of_a_batch_feed_says_to_ingest(tmp_path):
    from waterline import Feed

    feed = Feed(make_spec(tmp_path, {"rt": "TRUE"}))
    with pytest.raises(WaterlineError, match="ingest a partition first"):
        feed.read("rt")
