"""`waterline demo`: its specs point under the demo root, and the story it prints is true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from waterline import Feed
from waterline.cli import demo
from waterline.demo_data import indicator_rows, ticks_rows

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(
    r"^\s+(?P<feed>ticks|indicators)\s+(?P<tier>\w+)\s+(?P<w>\S+)\s+(?P<rows>\d+)\s+(?P<gained>\d+)"
    r"\s+(?P<updated>\d+)\s+(?P<lost>\d+)\s+(?P<expired>\d+)\s+(?P<next>\S+)$"
)


def test_demo_specs_read_and_write_under_root(tmp_path):
    specs = demo.demo_specs(tmp_path, REPO)
    assert set(specs) == {"ticks", "indicators"}
    demo.write_sources(tmp_path)
    for feed, spec in specs.items():
        assert spec.warehouse == tmp_path / "warehouse"
        for day in (demo.MON, demo.TUE):
            folder = Path(spec.source_path("source", day))
            assert folder.is_relative_to(tmp_path / "data") and any(folder.iterdir())
        assert spec.job_callable() is not None  # spark_jobs imports from the repo


def test_demo_steps_move_forward():
    from waterline.clock import parse_instant

    instants = [parse_instant(s.as_of) for s in demo.STEPS]
    assert instants == sorted(instants) and len(set(instants)) == len(instants)


def test_find_repo_from_elsewhere(tmp_path):
    assert demo.find_repo(tmp_path) == REPO


def steps_from_output(lines: list[str]) -> list[dict]:
    """Per printed step: {(feed, tier): {rows, gained, updated, lost, expired, w}}."""
    steps: list[dict] = []
    for line in "\n".join(lines).splitlines():
        if re.match(r"^\[\d+\] ", line):
            steps.append({})
        elif steps and (m := ROW.match(line)):
            d = m.groupdict()
            steps[-1][(d["feed"], d["tier"])] = {k: int(v) for k, v in d.items() if v.isdigit()} | {"w": d["w"]}
    return steps


@pytest.fixture(scope="module")
def demo_run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    lines: list[str] = []
    report = demo.run_demo(root, echo=lines.append, spark=spark, repo=REPO)
    return root, lines, report, steps_from_output(lines)


@pytest.mark.spark
def test_demo_story(demo_run):
    root, lines, report, steps = demo_run
    text = "\n".join(lines)
    assert len(steps) == len(demo.STEPS) == len(report.steps)
    assert "Traceback" not in text

    # [1] 08:29 ET: the figures are held; [2] 08:30 ET: subscribers see Monday's, the public nothing.
    assert steps[0][("indicators", "subscribers")]["rows"] == 0
    assert steps[0][("indicators", "public")]["rows"] == 0
    assert steps[0][("indicators", "subscribers")]["w"] == "2026-01-05T13:29:00Z"
    assert steps[1][("indicators", "subscribers")]["rows"] == steps[1][("indicators", "subscribers")]["gained"] == 4
    assert steps[1][("indicators", "public")]["rows"] == 0

    # [3] the close: realtime has every trade, delayed_15m lags by the last 15 minutes.
    realtime, delayed, last = (steps[2][("ticks", t)] for t in ("realtime", "delayed_15m", "last_24h"))
    assert realtime["rows"] == len(ticks_rows(demo.MON)) == 300
    assert 0 < delayed["rows"] < realtime["rows"]
    assert last["rows"] == 300

    # [4] a day after the embargo the public gets Monday's figures, subscribers Tuesday's.
    assert steps[3][("indicators", "public")]["rows"] == 4
    assert steps[3][("indicators", "subscribers")]["rows"] == 8

    # [5] Tuesday's trades in; Monday's expire from last_24h.
    last = steps[4][("ticks", "last_24h")]
    assert last["expired"] == 300 and last["lost"] == 300 and last["rows"] == 300
    assert steps[4][("ticks", "realtime")]["rows"] == 600
    assert steps[4][("ticks", "delayed_15m")]["rows"] < 600

    # [6] revisions: a cancel removes the trade, a correction updates it, in both live tiers.
    revised = ticks_rows(demo.MON, 1)
    cancels = sum(t["status"] == "cancel" for t in revised)
    corrections = sum(t["status"] == "correction" for t in revised)
    assert cancels > 0 and corrections > 0
    for tier in ("realtime", "delayed_15m"):
        row = steps[5][("ticks", tier)]
        assert row["lost"] == cancels and row["updated"] == corrections
        assert row["rows"] == 600 - cancels
    assert steps[5][("ticks", "last_24h")]["rows"] == 300  # Monday had already expired there
    assert "cancelled trades still in a tier: realtime 0, delayed_15m 0, last_24h 0" in text
    assert re.search(r"cancel \w+ #\d+: in realtime: no", text)
    figures = sum(r["revision"] == "1" for r in indicator_rows(demo.TUE, 1))
    assert steps[5][("indicators", "subscribers")]["updated"] == figures > 0
    assert steps[5][("indicators", "public")]["rows"] == 4  # Tuesday's not public yet

    # [7] the public gets Tuesday's figures, already revised: it never saw the first values.
    assert steps[6][("indicators", "public")]["rows"] == 8
    latest = {}
    for r in indicator_rows(demo.TUE, 1):
        latest[(r["indicator"], r["period"])] = float(r["value"])
    public = demo.read_tier(Feed(demo.demo_specs(root, REPO)["indicators"]), "public", demo.TUE)
    assert {(r["indicator"], r["period"]): r["value"] for r in public} == latest

    # The end: the status tables of both feeds.
    assert "feed ticks: now " in text and "feed indicators: now " in text
    assert text.index("waterline status") > text.index("[7] ")


@pytest.mark.spark
def test_demo_rows_match_tier_tables(demo_run):
    root, _, report, _ = demo_run
    specs = demo.demo_specs(root, REPO)
    final = {}
    for record in report.steps:
        for feed, tiers in record["rows"].items():
            final.update({(feed, tier): n for tier, n in tiers.items()})
    for (feed, tier), n in final.items():
        assert len(demo.read_tier(Feed(specs[feed]), tier)) == n


@pytest.mark.spark
def test_demo_counts_add_up_and_status_has_the_last_w(demo_run):
    root, _, report, _ = demo_run
    before: dict = {}
    last_w: dict = {}
    for record in report.steps:
        for feed, result in record["releases"].items():
            for tier, t in result.tiers.items():
                rows = record["rows"][feed][tier]
                assert rows - before.get((feed, tier), 0) == t.released - t.removed, (record["title"], feed, tier)
                before[(feed, tier)] = rows
                last_w[(feed, tier)] = t.w_us
    for feed, spec in demo.demo_specs(root, REPO).items():
        for tier, status in Feed(spec).status().tiers.items():  # read from the Delta logs, no Spark
            assert status.w_us == last_w[(feed, tier)], (feed, tier)
