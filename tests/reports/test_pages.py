"""The report pages from result values (no Spark, no browser): what they carry and list."""

from __future__ import annotations

import json

from tests.reports.pagecheck import carried, table_rows
from waterline.engine.core.results import Breach, ReleaseProof, TierProof
from waterline.reports import audit_page, audit_summary, usage_page
from waterline.reports.page import DATA_ID, EVENTS_ID, as_json
from waterline.reports.usage_page import month_events
from waterline.sharing.usage import TierUsage, UsageReport, month_range

S = 1_000_000
T0 = 1_790_000_000 * S


def _release(version: int, margin_s: float | None, breaches: int = 0) -> ReleaseProof:
    return ReleaseProof(version=version, committed_us=T0 + version * 60 * S, writer_us=T0 + version * 60 * S,
                        store_us=None, w_us=T0 + version * 60 * S, seq=version, operation="WRITE", inserted=2,
                        min_margin_us=None if margin_s is None else int(margin_s * S), breaches=breaches)


def test_the_audit_page_carries_the_json_and_lists_breaches_and_what_was_not_proven():
    key = ("2026-01-05", "</script><b>x")  # a key that would end the data's script element
    breach = Breach(tier="late", version=2, key=key, seq=2, change="insert", due_us=T0 + 150 * S,
                    committed_us=T0 + 120 * S, w_us=T0 + 120 * S)
    proofs = {
        "now": TierProof(tier="now", exists=True, releases=(_release(1, 0.5), _release(2, 3.0))),
        "late": TierProof(tier="late", exists=True, releases=(_release(1, 10.0), _release(2, -30.0, breaches=1)),
                          breaches=(breach,), unproven=((0, 0, "cleaned from the log"),)),
        "never": TierProof(tier="never", exists=False),
    }
    events = [{"at": T0 + 90 * S, "event": "token_created", "recipient": "acme", "token_id": "t1", "expires": None,
               "feed": None, "audiences": None},
              {"at": T0, "event": "audiences", "recipient": None, "token_id": None, "expires": None, "feed": "f",
               "audiences": json.dumps({"acme": ["now"]})},
              {"at": T0, "event": "token_created", "recipient": "other-feeds-only", "token_id": "t2",
               "expires": None, "feed": None, "audiences": None}]
    text = audit_page("f", proofs, events, generated_us=T0 + 200 * S)
    assert carried(text, DATA_ID) == as_json({t: p.to_dict() for t, p in proofs.items()})
    assert [e["token_id"] for e in carried(text, EVENTS_ID) if e["event"] != "audiences"] == ["t1"]
    assert "<b>x" not in text.split(f'id="{DATA_ID}"')[0]  # the key is escaped wherever it is shown
    assert [r[0] for r in table_rows(text, "summary")] == ["now", "late", "never"]
    assert [r["verdict"] for r in audit_summary(proofs)] == ["clean", "BREACH", "no table"]
    assert audit_summary(proofs)[1]["least_margin_s"] == -30.0
    [row] = table_rows(text, "breaches")
    assert row[2] == str(list(key))
    assert table_rows(text, "unproven") == [["0", "0", "cleaned from the log"]]


def test_the_audit_page_marks_each_spec_version_on_the_timeline_and_lists_them():
    """Issue 56: each applied spec version after the first is a line on every tier's timeline
    where it falls within the commits, and the page lists every version."""
    from waterline.engine.tables.applied_spec import AppliedSpec
    from waterline.reports import audit_figure

    proofs = {"late": TierProof(tier="late", exists=True, releases=(_release(1, 10.0), _release(3, 5.0)))}
    specs = (AppliedSpec(1, "h1", T0 - 60 * S, {"tiers": {}}, "first ingest"),
             AppliedSpec(2, "h2", T0 + 90 * S, {"tiers": {}}, "tier late: policy 'a' -> 'b'"),
             AppliedSpec(3, "h3", T0 + 900 * S, {"tiers": {}}, "tier late retired"))
    fig = audit_figure("late", proofs["late"], (), specs)
    marks = [t.hovertemplate for t in fig.data if t.hovertemplate and "spec version" in t.hovertemplate]
    assert len(marks) == 1 and marks[0].startswith("spec version 2 applied: tier late: policy 'a' -> 'b'")
    assert len([s for s in fig.layout.shapes if s.line.color == "#7048e8"]) == 1  # v1 and v3 lie outside
    text = audit_page("f", proofs, (), generated_us=T0 + 1000 * S, specs=specs)
    assert [r[0] for r in table_rows(text, "specs")] == ["1", "2", "3"]
    assert table_rows(text, "specs")[1][2] == "tier late: policy 'a' -> 'b'"


def test_the_usage_page_shows_expiries_in_the_month_and_carries_the_report():
    start, end = month_range("2026-10")
    made = {"event": "token_created", "recipient": "acme", "feed": None, "audiences": None}
    events = [
        {**made, "at": start - 10 * S, "token_id": "expires-in-month", "expires": start + 86_400 * S},
        {**made, "at": start + S, "token_id": "revoked-first", "expires": start + 2 * 86_400 * S},
        {"event": "token_revoked", "recipient": "acme", "at": start + 3600 * S, "token_id": "revoked-first",
         "expires": None, "feed": None, "audiences": None},
        {**made, "at": start + S, "token_id": "expires-later", "expires": end + S},
    ]
    report = UsageReport(month="2026-10", start_us=start, end_us=end,
                         rows=(TierUsage(feed="f", tier="now", recipient="acme", days_entitled=2, days_read=1,
                                         requests=3, rows=30, versions=1, first_access_us=start + 5 * S,
                                         last_access_us=start + 9 * S),),
                         totals={"f.now": {"recipients_entitled": 1, "recipients_reading": 1, "requests": 3,
                                           "rows": 30}})
    shown = month_events(report, events)
    assert [(e["event"], e["token_id"]) for e in shown] == [
        ("token_created", "revoked-first"), ("token_created", "expires-later"), ("token_revoked", "revoked-first"),
        ("token_expired", "expires-in-month")]
    text = usage_page(report, events, generated_us=end)
    from dataclasses import asdict

    assert carried(text, DATA_ID) == as_json(asdict(report))
    assert table_rows(text, "totals") == [["f.now", "1", "1", "3", "30"]]
