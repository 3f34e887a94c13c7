"""`waterline stream` as a user runs it: one line for what they can fix, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.streams.kafkakit import stream_spec
from waterline.engine.spark.processes import free_port

CLI = str(Path(sys.executable).with_name("waterline"))


def test_an_unreachable_broker_is_one_line_naming_the_bootstrap(tmp_path):
    nobody = f"127.0.0.1:{free_port()}"
    spec = stream_spec(tmp_path, nobody, "quotes", extra={"source": {
        "format": "kafka", "bootstrap": nobody, "topic": "quotes",
        "options": {"kafka.default.api.timeout.ms": 3000, "kafka.request.timeout.ms": 2000}}})
    done = subprocess.run([CLI, "stream", str(spec), "--once"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr  # the CLI's exit status for an error of the input
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1] == f"error: feed quotes: source source: cannot reach the Kafka brokers at {nobody} " \
                        "(Spark's Kafka client timed out listing them)", done.stderr
    assert "Traceback" not in done.stderr
