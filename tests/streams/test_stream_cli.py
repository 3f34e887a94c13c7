"""`waterline stream` as a user runs it: one line for what they can fix, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.streams.kafkakit import stream_spec
from waterline.local.processes import free_port

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


def test_a_running_stream_makes_records_readable_and_stops_cleanly_on_sigterm(kafka, tmp_path):
    """Without --once: records produced while it runs reach the real-time tier in the same
    process; SIGTERM stops it after its current batch, exit 0, with its summary."""
    import signal
    import time

    from tests.streams.kafkakit import iso, new_topic, produce
    from waterline import load

    topic = new_topic(kafka.bootstrap)
    spec = stream_spec(tmp_path, kafka.bootstrap, topic, tiers={"realtime": "TRUE"})
    proc = subprocess.Popen([CLI, "stream", str(spec), "--trigger-seconds", "0.5"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        feed = load(spec)
        deadline = time.monotonic() + 240
        while not feed.status().seq and time.monotonic() < deadline:  # the first (empty) batches pass
            produce(kafka.bootstrap, topic, [(0, "warm", {"px": 0.0, "ts": iso(1_767_571_200_000_000)})])
            time.sleep(2)
        produced = time.monotonic()
        produce(kafka.bootstrap, topic, [(0, "a", {"px": 1.0, "ts": iso(1_767_571_200_000_000)})])
        while time.monotonic() < deadline:
            rows = feed.read("realtime", columns=["id"]).column("id").to_pylist()
            if "a" in rows:
                break
            time.sleep(0.1)
        readable_s = time.monotonic() - produced
        assert "a" in rows, "the record never reached the real-time tier"
        print(f"produce -> readable in the real-time tier: {readable_s:.2f} s")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    assert any(line.startswith("quotes: ") and " batches " in line for line in out.splitlines()), out
    assert "Traceback" not in err
