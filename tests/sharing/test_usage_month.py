"""A scripted month of reads: the official `delta-sharing` client against the sharing server
(uvicorn on 127.0.0.1) whose clock the script steps through October 2026. Tokens are
created, one is revoked, one expires, and the server restarts with the spec's audiences
changed; a release lands mid-month. `waterline report usage --json` equals the report of the
access records, and its days, requests, rows and versions are the ones the script made; its
--html page, and the feed's `waterline audit --html`, render in headless Chromium.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.engine.feedkit import far_future_clock, make_spec, write_partition
from tests.engine.model import MINUTE
from tests.sharing.conftest import TIERS, LiveServer, write_profile
from tests.sharing.scenario import BASE_US, STEPS, source

pytestmark = pytest.mark.spark

delta_sharing = pytest.importorskip("delta_sharing")

BEFORE = {"acme": ["d10"], "news": ["win", "emb"]}
AFTER = {"acme": ["d10", "win"], "news": ["win", "emb"]}  # the spec's audiences from Oct 22


def _ms(day: int, hour: int = 12, month: int = 10) -> int:
    return int(datetime(2026, month, day, hour, tzinfo=UTC).timestamp() * 1000)


class ScriptClock:
    """The server's clock, set by the script."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def _cli(*args: str) -> subprocess.CompletedProcess:
    waterline = str(Path(sys.executable).with_name("waterline"))
    return subprocess.run([waterline, *args], capture_output=True, text=True, timeout=600, check=False)


def test_a_scripted_month_of_reads_is_what_the_usage_report_counts(spark, tmp_path):
    from waterline import Feed
    from waterline.sharing.access_records import AccessRecords, access_path
    from waterline.sharing.server import SharingServer
    from waterline.sharing.tokens import TokenStore, default_store_path
    from waterline.sharing.usage import usage_report

    spec = make_spec(tmp_path, TIERS, audiences=BEFORE)
    feed = Feed(spec, spark=spark, clock=far_future_clock())
    write_partition(tmp_path, "a", [source(r) for r in STEPS[0][0]])
    feed.ingest("a")
    feed.release(as_of=BASE_US + STEPS[0][1] * MINUTE)

    clock = ScriptClock(_ms(1, 0))
    store = TokenStore(default_store_path(spec))
    server = LiveServer(SharingServer([spec], store, now_ms=clock))
    served: dict[tuple[str, str], dict] = {}  # (recipient, tier) -> days read, rows loaded

    def read(day: int, recipient: str, tier: str, profile: str, *, hour: int = 12, month: int = 10) -> int | None:
        """One load_as_pandas at the scripted instant; None when the server refused it."""
        clock.ms = _ms(day, hour, month)
        try:
            df = delta_sharing.load_as_pandas(f"{profile}#f.tiers.{tier}")
        except Exception as exc:  # noqa: BLE001  (a refusal is part of the script)
            assert "401" in str(exc) or "Unauthorized" in str(exc), exc
            return None
        if month == 10:
            got = served.setdefault((recipient, tier), {"days": set(), "rows": 0})
            got["days"].add(day)
            got["rows"] += len(df)
        return len(df)

    try:
        clock.ms = _ms(1, 1)
        acme_token, acme = store.create("acme", now_ms=clock.ms, expires_ms=_ms(20))
        clock.ms = _ms(3, 9)
        news_token, news = store.create("news", now_ms=clock.ms, expires_ms=None)
        acme_profile = write_profile(tmp_path, "acme1", server.endpoint, acme_token)
        news_profile = write_profile(tmp_path, "news", server.endpoint, news_token)
        assert read(2, "acme", "d10", acme_profile) is not None
        assert read(4, "news", "win", news_profile) is not None
        assert read(5, "acme", "d10", acme_profile, hour=9) is not None
        assert read(5, "acme", "d10", acme_profile, hour=17) is not None
        assert read(10, "news", "emb", news_profile) is not None
        assert read(15, "acme", "d10", acme_profile) is not None
        # mid-month: a revision released, so later reads are of a newer version
        write_partition(tmp_path, "a", [source(r) for r in STEPS[1][0]])
        feed.ingest("a")
        feed.release(as_of=BASE_US + STEPS[1][1] * MINUTE)
        clock.ms = _ms(12)
        store.revoke("news", now_ms=clock.ms)
        assert read(13, "news", "win", news_profile) is None  # revoked
        assert read(21, "acme", "d10", acme_profile) is None  # expired on the 20th at noon
    finally:
        server.stop()
        server.sharing.access.close()

    # A restart with the spec's audiences changed: acme may read `win` too, with a new token.
    changed = make_spec(tmp_path, TIERS, audiences=AFTER)
    clock.ms = _ms(22, 0)
    server = LiveServer(SharingServer([changed], store, now_ms=clock))
    try:
        clock.ms = _ms(22, 1)
        acme2_token, acme2 = store.create("acme", now_ms=clock.ms, expires_ms=None)
        acme2_profile = write_profile(tmp_path, "acme2", server.endpoint, acme2_token)
        assert read(25, "acme", "win", acme2_profile) is not None
        assert read(28, "acme", "d10", acme2_profile) is not None
        assert read(1, "acme", "d10", acme2_profile, hour=0, month=11) is not None  # November: not in the report
    finally:
        server.stop()
        server.sharing.access.close()

    spec_file = tmp_path / "f.yaml"
    spec_file.write_text(yaml.safe_dump(changed.to_dict()))
    page = tmp_path / "usage.html"
    done = _cli("report", "usage", str(spec_file), "--month", "2026-10", "--json", "--html", str(page))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)

    # The report is the access records' and the trail's, as another process reads them.
    records = AccessRecords(access_path(store.where)).records()
    events = TokenStore(default_store_path(changed)).trail.events()
    assert printed == json.loads(json.dumps(asdict(usage_report("2026-10", {"f": list(TIERS)}, events, records))))
    rows = {(r["recipient"], r["tier"]): r for r in printed["rows"]}
    assert set(rows) == {("acme", "d10"), ("acme", "win"), ("news", "win"), ("news", "emb")}, rows

    # ... and what the script did: days entitled (a token live and the tier in the audiences at
    # some instant of the day), days read, rows loaded, answered requests recounted, versions.
    october = [r for r in records if _ms(1, 0) * 1000 <= r["at"] < _ms(1, 0, 11) * 1000]
    assert {r["status"] for r in october} >= {200, 401}
    assert rows["acme", "d10"]["days_entitled"] == 20 + 10  # Oct 1-20, 22-31; not the 21st
    assert rows["acme", "win"]["days_entitled"] == 10  # from the restart on the 22nd
    assert rows["news", "win"]["days_entitled"] == rows["news", "emb"]["days_entitled"] == 10  # Oct 3-12
    for (recipient, tier), got in served.items():
        row = rows[recipient, tier]
        mine = [r for r in october if r["status"] == 200 and r["recipient"] == recipient and r["table"] == f"f.tiers.{tier}"]
        assert row["days_read"] == len(got["days"]), (recipient, tier, row)
        assert row["requests"] == len(mine) >= len(got["days"]), (recipient, tier, row)
        assert row["rows"] == got["rows"], (recipient, tier, row, got)
        assert row["first_access_us"] == min(r["at"] for r in mine)
        assert row["last_access_us"] == max(r["at"] for r in mine)
    assert rows["acme", "d10"]["versions"] == 2  # before and after the mid-month release
    assert printed["totals"]["f.d10"]["recipients_reading"] == 1
    assert all(rows[k]["requests"] == 0 for k in rows if k not in served)

    # The page: what --json printed, the month's entitlement changes (the expiry among them).
    from tests.reports.pagecheck import check_carries, render, table_rows

    dom = render(page, "usage-2026-10.png", tmp_path)
    check_carries(dom, printed)
    assert [r[:3] for r in table_rows(dom, "usage")] == [[r["feed"], r["tier"], r["recipient"]] for r in printed["rows"]]
    changes = [r[1] for r in table_rows(dom, "events")]
    assert f"token expired: acme ({acme.id})" in changes and f"token revoked: news ({news.id})" in changes, changes
    assert f"token created: acme ({acme2.id})" in changes, changes

    # The feed's audit page: two clean releases, the trail's events listed.
    audit_page = tmp_path / "audit.html"
    audited = _cli("audit", str(spec_file), "--json", "--html", str(audit_page))
    assert audited.returncode == 0, audited.stderr
    dom = render(audit_page, "audit-clean.png", tmp_path)
    check_carries(dom, json.loads(audited.stdout))
    assert [r[-1] for r in table_rows(dom, "summary")] == ["clean"] * len(TIERS)
    assert f"token revoked: news ({news.id})" in [r[1] for r in table_rows(dom, "events")]
