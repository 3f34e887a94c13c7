"""`waterline report usage`: a month of entitlements and reads per recipient and tier (no Spark)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest
import yaml

from tests.engine.feedkit import spec_dict
from tests.sharing.test_tokens_cli import TIERS, _cli
from waterline.errors import WaterlineError
from waterline.sharing.entitlements import AUDIENCES, CREATED, REVOKED
from waterline.sharing.usage import TierUsage, month_range, usage_report


def _us(*args) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1_000_000)


def _event(at, event, recipient=None, token=None, feed=None, audiences=None, expires=None):
    return {"at": at, "event": event, "recipient": recipient, "token_id": token, "feed": feed,
            "audiences": None if audiences is None else json.dumps(audiences), "expires": expires}


def _read(at, recipient, tier, rows, version, status=200):
    return {"at": at, "recipient": recipient, "table": f"f.tiers.{tier}", "rows": rows, "version": version,
            "status": status}


def test_a_month_of_entitlements_and_reads():
    events = [
        _event(_us(2026, 9, 1), AUDIENCES, feed="f", audiences={"acme": ["late"], "news": ["realtime"]}),
        _event(_us(2026, 9, 1, 1), CREATED, "news", "n1"),
        _event(_us(2026, 10, 3, 12), CREATED, "acme", "a1"),
        _event(_us(2026, 10, 10), REVOKED, "acme", "a1"),  # at the first instant of the 10th
        _event(_us(2026, 10, 15, 9), AUDIENCES, feed="f", audiences={"acme": ["late"], "news": ["realtime", "late"]}),
        _event(_us(2026, 10, 29), CREATED, "news", "n2", expires=_us(2026, 10, 29, 6)),
    ]
    access = [
        _read(_us(2026, 10, 4, 8), "acme", "late", 10, 5), _read(_us(2026, 10, 4, 9), "acme", "late", 20, 6),
        _read(_us(2026, 10, 5, 9), "acme", "late", 0, 6), _read(_us(2026, 10, 5, 10), "acme", "late", 0, 7, 401),
        _read(_us(2026, 10, 20), "news", "realtime", 7, 40), _read(_us(2026, 11, 1), "news", "realtime", 9, 41),
        {"at": _us(2026, 10, 20), "recipient": "news", "table": None, "rows": None, "version": None, "status": 200},
    ]
    report = usage_report("2026-10", {"f": ["realtime", "late"]}, events, access)
    assert report.rows == (
        TierUsage("f", "late", "acme", days_entitled=7, days_read=2, requests=3, rows=30, versions=2,
                  first_access_us=_us(2026, 10, 4, 8), last_access_us=_us(2026, 10, 5, 9)),
        TierUsage("f", "late", "news", days_entitled=17),  # from the 15th (spec change) to the 31st
        TierUsage("f", "realtime", "news", days_entitled=31, days_read=1, requests=1, rows=7, versions=1,
                  first_access_us=_us(2026, 10, 20), last_access_us=_us(2026, 10, 20)),
    )
    assert report.totals["f.late"] == {"recipients_entitled": 2, "recipients_reading": 1, "requests": 3, "rows": 30}
    assert month_range("2026-02")[1] - month_range("2026-02")[0] == 28 * 86_400_000_000
    with pytest.raises(WaterlineError, match="--month: expected YYYY-MM"):
        month_range("2026-13")


def test_waterline_report_usage_from_the_command_line(tmp_path):
    spec_file = tmp_path / "f.yaml"
    spec_file.write_text(yaml.safe_dump({**spec_dict(tmp_path, TIERS), "audiences": {"acme": ["late"]}}))
    assert _cli("share", "token", "create", str(spec_file), "acme", cwd=tmp_path).returncode == 0
    month = datetime.now(UTC).strftime("%Y-%m")
    out = _cli("report", "usage", str(spec_file), "--month", month, "--csv", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    [row] = list(csv.DictReader(io.StringIO(out.stdout)))
    assert (row["recipient"], row["tier"], row["requests"]) == ("acme", "late", "0") and int(row["days_entitled"]) >= 1
    text = _cli("report", "usage", str(spec_file), "--month", month, cwd=tmp_path)
    assert text.returncode == 0 and "acme" in text.stdout
    bad = _cli("report", "usage", str(spec_file), "--month", "October", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --month:") and "Traceback" not in bad.stderr
