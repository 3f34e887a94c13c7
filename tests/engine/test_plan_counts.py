"""`waterline plan`'s counts of a pending spec change (issue 56), on Spark + Delta: each number
plan gives before `apply` is what the apply and the next release then do, read from the
tables (versions newly shown, rows withdrawn, kept, ending sooner; a new tier's first
release; a retired tier's rows; the tables a new column is added to)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from tests.cli.test_errors import _script
from tests.engine.feedkit import SCHEMA, TRANSFORM, far_future_clock, make_spec, spec_dict
from tests.engine.respec_kit import Both, at, delay, window
from waterline import Feed
from waterline.engine.delta.table_log import TableLog
from waterline.semantics import NEG_INF, POS_INF
from waterline.semantics.spec_history import Policy

pytestmark = pytest.mark.spark

#: Events every 5 minutes from 10:00 (10:00 .. 10:35).
V1 = {i: (f"10:{i * 5:02d}", "a") for i in range(8)}
#: Revisions of ids 0 and 3, id 5 removed, a late event.
V2 = {**{i: (t, "b" if i % 3 == 0 else v) for i, (t, v) in V1.items() if i != 5}, 9: ("10:01", "late")}


def _planned(both: Both, tiers: dict, **overrides) -> Feed:
    """The feed of a changed spec file (not applied)."""
    sqls = {t: sql for t, (sql, _) in tiers.items()}
    return Feed(make_spec(both.root, sqls, **overrides), spark=both.spark, clock=far_future_clock())


def _shown(both: Both, tier: str) -> dict[tuple, tuple[int, int]]:
    """(partition, id) -> (seq, end) of the rows the tier shows now."""
    if not TableLog.open(both.feed.spec.tier_path(tier)).exists:
        return {}
    rows = both.feed.read(tier, columns=["_wl_partition", "id", "_wl_seq", "_wl_end"]).to_pylist()
    return {(r["_wl_partition"], r["id"]): (r["_wl_seq"], r["_wl_end"]) for r in rows}


def _effects(before: dict, after: dict) -> dict[str, int]:
    """What a release did to a tier's rows, in plan's terms."""
    return {
        "due": sum(1 for k, (seq, _) in after.items() if before.get(k, (None,))[0] != seq),
        "withdrawn": sum(1 for k in before if k not in after),
        "sooner": sum(1 for k, (seq, end) in after.items() if k in before and before[k][0] == seq
                      and end < before[k][1]),
    }


def test_a_shortened_delay_counts_the_versions_its_next_release_shows(spark, tmp_path):
    both = Both(spark, tmp_path, {"d15": delay(15)})
    both.ingest(V1)
    both.release("10:40")
    both.ingest(V2)  # pending revisions: the new policy schedules them too
    new = {"d15": delay(5)}
    plan = _planned(both, new).plan(counts=True)
    counts = plan.counts["tiers"]["d15"]
    # shown: 10:00 .. 10:25; due at 10:40 under 5 minutes: 10:30, 10:35, the revisions of ids 0 and 3
    # and the late id 9; id 5's removal withdraws it
    assert (counts["w_us"], counts["due"], counts["withdrawn"], counts["kept"]) == (at("10:40"), 5, 1, 0)
    assert f"{counts['due']:,} pending versions become due at once" in plan.changes[0]

    before = _shown(both, "d15")
    both.apply(new)
    both.release("10:40")  # the same W: what the change itself does
    both.check()
    effects = _effects(before, _shown(both, "d15"))
    assert (effects["due"], effects["withdrawn"], effects["sooner"]) == (
        counts["due"], counts["withdrawn"], counts["sooner"])


def test_a_lengthened_delay_and_a_shortened_window_count_kept_withdrawn_and_sooner(spark, tmp_path):
    both = Both(spark, tmp_path, {"d15": delay(15), "win": window(0, 60)})
    both.ingest(V1)
    both.release("10:32")
    new = {"d15": delay(30), "win": window(0, 10)}
    counts = _planned(both, new).plan(counts=True).counts["tiers"]
    # d15 shows events up to 10:15; under 30 minutes only 10:00 would be due: 3 kept, none withdrawn
    assert counts["d15"] == {"w_us": at("10:32"), "due": 0, "withdrawn": 0, "kept": 3, "sooner": 0, "on_hold": False}
    # win shows 10:00 .. 10:30; a 10 minute window leaves 10:25 and 10:30, which expire sooner
    assert (counts["win"]["withdrawn"], counts["win"]["sooner"], counts["win"]["due"]) == (5, 2, 0)

    before = {t: _shown(both, t) for t in new}
    both.apply(new)
    both.release("10:32")
    both.check()
    for tier in new:
        effects = _effects(before[tier], _shown(both, tier))
        assert (effects["due"], effects["withdrawn"], effects["sooner"]) == (
            counts[tier]["due"], counts[tier]["withdrawn"], counts[tier]["sooner"]), tier
    assert len(_shown(both, "d15")) == len(before["d15"])  # the kept rows stay


def test_a_new_tier_counts_its_first_release_and_a_retired_tier_its_rows(spark, tmp_path):
    both = Both(spark, tmp_path, {"rt": ("TRUE", Policy("TRUE", lambda p: ((NEG_INF, POS_INF),))), "d15": delay(15)})
    both.ingest(V1)
    both.release("10:20")
    both.ingest(V2)
    both.release("10:40")
    new = {"d15": delay(15), "d20": delay(20), "win": window(0, 30)}
    plan = _planned(both, new).plan(counts=True)
    counts = plan.counts
    assert counts["retired_rows"] == {"rt": len(_shown(both, "rt"))}
    retired = f"tier rt retired: {len(_shown(both, 'rt'))} rows in its table, kept until an explicit drop"
    assert retired in plan.changes

    both.apply(new)  # builds the new tiers at the feed's W
    both.check()
    for tier in ("d20", "win"):
        assert counts["tiers"][tier]["w_us"] == at("10:40")
        assert counts["tiers"][tier]["due"] == len(_shown(both, tier)) > 0, tier
        assert f"{len(_shown(both, tier))} rows at its first release" in "\n".join(plan.changes)


def test_a_new_column_names_the_tables_that_gain_it_and_no_warehouse_is_not_counted(tmp_path):
    feed = Feed(make_spec(tmp_path, {"d15": "TRUE"}), clock=far_future_clock())
    feed.apply()  # a version recorded before any ingest: nothing held to count
    plan = Feed(make_spec(tmp_path, {"d15": "TRUE", "d5": "TRUE"}), clock=far_future_clock()).plan(counts=True)
    assert plan.changes == ("tier d5 added",) and "nothing was ingested yet" in plan.describe()


def test_the_cli_prints_the_counted_line_and_json(spark, tmp_path):
    both = Both(spark, tmp_path, {"d15": delay(15)})
    both.ingest(V1)
    both.release("10:40")
    spec = tmp_path / "f.yaml"
    spec.write_text(yaml.safe_dump(spec_dict(tmp_path, {"d15": delay(10)[0]})))
    run = lambda *args: subprocess.run([_script(), *args], capture_output=True, text=True, timeout=300)  # noqa: E731
    text = run("plan", str(spec))
    assert text.returncode == 0, text.stderr
    assert "tier d15: policy" in text.stdout
    assert "1 pending version becomes due at once (at W 2026-01-01T10:40:00Z, its next release)" in text.stdout
    data = json.loads(run("plan", str(spec), "--json", "--no-counts").stdout)
    assert data["_wl_changes"]["counts"]["tiers"] == {} and "not counted" in data["_wl_changes"]["counts"]["note"]
    counted = json.loads(run("plan", str(spec), "--json").stdout)["_wl_changes"]
    assert counted["counts"]["tiers"]["d15"]["due"] == 1
    source = {"format": "json", "path": str(tmp_path / "src" / "{partition}"),
              "options": {"schema": SCHEMA + ", venue STRING"}}
    column = Feed(make_spec(tmp_path, {"d15": delay(15)[0]}, source=source,
                            transform=TRANSFORM.replace(" FROM source", ", CAST(venue AS STRING) AS venue FROM source")))
    assert column.plan().counts["column_tables"] == {"venue": ["held", "d15"]}


def test_a_new_tier_whose_policy_names_a_column_the_change_adds_is_counted(spark, tmp_path):
    """The column is NULL in every version held when `apply` adds it, so the count reads it
    as NULL too (it had failed compiling the policy against held's columns)."""
    from tests.engine.feedkit import write_partition
    from tests.engine.test_release_differential import _iso

    minute = 60_000_000
    now = at("10:40")
    rows = [{"id": i, "event_time": _iso(at("10:00") + i * 5 * minute), "status": "final", "embargo_until": None,
             "v": "x"} for i in range(8)]
    write_partition(tmp_path, "a", rows)
    first = Feed(make_spec(tmp_path, {"d15": delay(15)[0]}), spark=spark, clock=far_future_clock())
    first.ingest("a")
    first.release(as_of=now)
    source = {"format": "json", "path": str(tmp_path / "src" / "{partition}"),
              "options": {"schema": SCHEMA + ", venue STRING"}}
    tiers = {"d15": delay(15)[0], "dv": "coalesce(venue, 'none') = 'none' AND event_time + INTERVAL 20 MINUTES "
                                        "<= WATERLINE()"}
    changed = Feed(make_spec(tmp_path, tiers, source=source,
                             transform=TRANSFORM.replace(" FROM source", ", CAST(venue AS STRING) AS venue FROM source")),
                   spark=spark, clock=far_future_clock())
    plan = changed.plan(counts=True)
    assert plan.counts["column_tables"] == {"venue": ["held", "d15"]}
    counted = plan.counts["tiers"]["dv"]["due"]
    assert counted == 5  # 10:00 .. 10:20 are 20 minutes old at 10:40
    changed.apply()
    assert changed.read("dv").num_rows == counted
