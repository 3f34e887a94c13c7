"""`waterline kafka start|status|topic|stop` as a user runs them: the real CLI, a real broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import AdminClient

CLI = str(Path(sys.executable).with_name("waterline"))


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([CLI, "kafka", *args], capture_output=True, text=True, timeout=180)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def _topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def test_start_topic_stop_and_a_restart_that_keeps_the_topics_and_the_address(tmp_path):
    state = str(tmp_path / "kafka")
    try:
        started = _cli("start", "--dir", state, "--topic", "ticks", "--partitions", "3").stdout
        bootstrap = started.splitlines()[0].removeprefix("bootstrap ").strip()
        assert bootstrap.startswith("127.0.0.1:") and "running" in started
        _cli("topic", "--dir", state, "quotes")
        meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert len(meta.topics["ticks"].partitions) == 3 and "quotes" in meta.topics

        assert "stopped" in _cli("stop", "--dir", state).stdout
        assert "broker   stopped" in _cli("status", "--dir", state).stdout
        refused = _cli("topic", "--dir", state, "more", check=False)
        assert refused.returncode != 0 and "`waterline kafka start` first" in refused.stderr
        assert "Traceback" not in refused.stderr

        again = _cli("start", "--dir", state).stdout
        assert again.splitlines()[0] == f"bootstrap {bootstrap}"
        assert {"ticks", "quotes"} <= _topics(bootstrap)
    finally:
        _cli("stop", "--dir", state, check=False)
    assert "nothing to stop" in _cli("stop", "--dir", state).stdout


def test_status_without_a_broker_says_how_to_start_one(tmp_path):
    assert "`waterline kafka start`" in _cli("status", "--dir", str(tmp_path)).stdout
