"""Ingest behaviour: versions, idempotent re-runs, quarantine, duplicates, schema drift."""

from __future__ import annotations

import shutil

import pytest
from deltalake import DeltaTable

from tests.engine.feedkit import far_future_clock, make_spec, read_tier, write_partition
from waterline import Feed
from waterline.engine.delta.table_log import TableLog
from waterline.errors import WaterlineError

pytestmark = pytest.mark.spark

TIERS = {"rt": "TRUE", "d15": "event_time + INTERVAL 15 MINUTES <= WATERLINE()"}


def _row(i, minute=0, v="x", **extra):
    return {"id": i, "event_time": f"2026-01-01 10:{minute:02d}:00", "status": "final", "v": v, **extra}


def _feed(spark, spec) -> Feed:
    """The feed of ``spec`` on the test session, with a trusted clock past every test instant."""
    return Feed(spec, spark=spark, clock=far_future_clock())


def _held(spark, spec):
    return spark.read.format("delta").load(spec.held_path)


def test_versions_only_for_what_changed(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    feed = _feed(spark, spec)
    write_partition(tmp_path, "a", [_row(1), _row(2), _row(3)])
    first = feed.ingest("a")
    assert (first.seq, first.inserted, first.versions_written) == (1, 3, 3)

    again = feed.ingest("a")
    assert (again.seq, again.versions_written, again.unchanged) == (None, 0, 3)
    assert _held(spark, spec).count() == 3

    write_partition(tmp_path, "a", [_row(1), _row(2, v="y"), _row(4)])
    third = feed.ingest("a")
    assert (third.seq, third.inserted, third.updated, third.removed, third.unchanged) == (2, 1, 1, 1, 1)
    kinds = {(r["id"], r["_wl_removed"]) for r in _held(spark, spec).filter("_wl_seq = 2").collect()}
    assert kinds == {(2, False), (3, True), (4, False)}


def test_invalid_rows_quarantined_with_reason_rest_ingested(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [
        _row(1), {"id": None, "event_time": "2026-01-01 10:00:00", "v": "k"},
        {"id": 3, "event_time": None, "v": "n"}, {"id": 4, "event_time": "not a time", "v": "u"},
    ])
    result = _feed(spark, spec).ingest("a")
    assert (result.inserted, result.quarantined) == (1, 3)
    reasons = {r["_wl_reason"] for r in spark.read.format("delta").load(spec.quarantine_path).collect()}
    assert reasons == {"null key column id", "null event_time", "unparseable event_time: not a time"}
    # Re-running replaces the partition's quarantine rows instead of piling them up.
    _feed(spark, spec).ingest("a")
    assert spark.read.format("delta").load(spec.quarantine_path).count() == 3


def test_duplicate_keys_fail_naming_them_and_write_nothing(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [_row(1), _row(1, v="again"), _row(2)])
    with pytest.raises(WaterlineError, match=r"duplicate keys \['id'\].*\(id=1\) x2.*nothing was written"):
        _feed(spark, spec).ingest("a")
    assert not TableLog.open(spec.held_path).exists


def test_schema_drift_is_a_clear_error_and_changes_nothing(spark, tmp_path):
    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [_row(1)])
    _feed(spark, spec).ingest("a")
    drifted = make_spec(tmp_path, TIERS, transform="SELECT id, event_time, status, v, 1 AS extra FROM source")
    # The transform names its columns, so the spec's release part differs from the applied one.
    with pytest.raises(WaterlineError, match=r"column extra added; column embargo_until removed; run `waterline apply"):
        _feed(spark, drifted).ingest("a")
    shutil.rmtree(tmp_path / "wh" / "f" / "_wl_specs")  # as a feed ingested before specs were recorded
    with pytest.raises(WaterlineError, match=r"added \['extra'\].*removed \['embargo_until'\]"):
        _feed(spark, drifted).ingest("a")
    assert _held(spark, spec).count() == 1


def test_bad_policy_names_the_tier(spark, tmp_path):
    # SELECT *: the output's columns are unknown until Spark reads them, so the spec loads and
    # ingest is where the policy meets them (a select list naming them is refused at load)
    spec = make_spec(tmp_path, {"bad": "no_such_column <= WATERLINE()"}, transform="SELECT * FROM source")
    write_partition(tmp_path, "a", [_row(1)])
    with pytest.raises(WaterlineError, match="bad"):
        _feed(spark, spec).ingest("a")


def test_late_data_is_published_at_next_release(spark, tmp_path):
    """A version whose takeover is already below W_T when ingested is simply due."""
    from waterline.clock import parse_instant

    spec = make_spec(tmp_path, TIERS)
    feed = _feed(spark, spec)
    write_partition(tmp_path, "a", [_row(1)])
    feed.ingest("a")
    feed.release(as_of=parse_instant("2026-01-01T12:00:00Z"))
    write_partition(tmp_path, "a", [_row(1), _row(2, minute=5)])  # arrives late: due since 10:20
    feed.ingest("a")
    # Asking for an earlier W releases at W_T, and still publishes what was ingested since.
    result = feed.release(as_of=parse_instant("2026-01-01T11:00:00Z"))
    assert result.tiers["d15"].w_us == parse_instant("2026-01-01T12:00:00Z")
    assert set(read_tier(spark, spec, "d15")) == {("a", 1), ("a", 2)}
    repeat = feed.release(as_of=parse_instant("2026-01-01T11:00:00Z"))
    assert not any(t.changed for t in repeat.tiers.values())


def test_changed_nulls_are_changes_identical_output_writes_nothing(spark, tmp_path):
    """Row hashes tell (NULL, 'x') from ('x', NULL); the fingerprint tells any change apart."""
    spec = make_spec(tmp_path, TIERS)
    feed = _feed(spark, spec)
    write_partition(tmp_path, "a", [_row(1, status=None, v="final"), _row(2)])
    assert feed.ingest("a").versions_written == 2
    write_partition(tmp_path, "a", [_row(1, status="final", v=None), _row(2)])
    swapped = feed.ingest("a")
    assert (swapped.updated, swapped.unchanged) == (1, 1)
    write_partition(tmp_path, "a", [_row(2), _row(1, status="final", v=None)])  # same rows, new order
    assert feed.ingest("a").versions_written == 0


def test_foreign_commit_forces_a_full_diff(spark, tmp_path):
    """A row deleted from held by hand is restored by the next ingest: the fingerprint of the
    partition's last ingest is only trusted when no foreign commit touched rows since."""
    from waterline.engine.delta.storage import delta_table

    spec = make_spec(tmp_path, TIERS)
    feed = _feed(spark, spec)
    write_partition(tmp_path, "a", [_row(1), _row(2)])
    feed.ingest("a")
    spark.sql(f"DELETE FROM delta.`{spec.held_path}` WHERE id = 1")
    again = feed.ingest("a")
    assert (again.inserted, again.unchanged) == (1, 1)
    assert delta_table(spec.held_path).to_pyarrow_table().num_rows == 2


def test_held_statistics_cover_the_pruning_columns_of_wide_outputs(spark, tmp_path):
    """Delta's default statistics stop at 32 columns; releases prune by tau/last/seq, so the
    held table keeps statistics for exactly those, however wide the payload. A struct column
    (the row hash, and one in the payload) also gets one leaf, without which `deltalake`
    would read no statistics at all."""
    import pyarrow as pa
    from waterline.engine.delta.storage import delta_table

    wide = ", ".join(f"'w' AS c{i}" for i in range(40))
    nested = "named_struct('inner', named_struct('x', id), 'flag', id > 1, 'y', v) AS `s-t`"
    spec = make_spec(tmp_path, TIERS, transform=f"SELECT id, event_time, v, {nested}, {wide} FROM source")
    write_partition(tmp_path, "a", [_row(1), _row(2)])
    _feed(spark, spec).ingest("a")
    table = delta_table(spec.held_path)
    stats_columns = table.metadata().configuration["delta.dataSkippingStatsColumns"].split(",")
    assert sorted(stats_columns) == sorted(
        ["_wl_seq", "_wl_tau__rt", "_wl_last__rt", "_wl_tau__d15", "_wl_last__d15", "`s-t`.inner.x", "_wl_hash.h1"]
    )
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert all(a["min._wl_tau__d15"] is not None and a["max._wl_last__d15"] is not None for a in actions)


def test_profile_observed_during_the_duplicate_check_equals_the_standalone_profile(spark, tmp_path):
    """A partition with no earlier fingerprint is profiled inside the duplicate-key check's
    job (Spark observed metrics); it must give the very profile the standalone pass gives,
    also for an output with quarantined rows and for an empty one (no metrics: fallback)."""
    from waterline.engine.ingest.profile import profile, profile_checking_duplicates
    from waterline.engine.tables.schedule import compile_tiers
    from waterline.engine.ingest.source import read_output
    from waterline.engine.ingest.validate import REASON, parse_event_time, reason_column

    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [_row(1), _row(2, minute=7, v=None), {"id": None, "event_time": "x", "v": "k"}])
    raw = read_output(spark, spec, "a")
    payload = list(raw.columns)
    parsed = parse_event_time(spec, raw)
    plans = compile_tiers(spark, spec, parsed.select(payload))
    rows = parsed.withColumn(REASON, reason_column(spec, None))
    for frame in (rows, rows.filter("false")):
        standalone = profile(spec, frame, payload, plans)
        assert profile_checking_duplicates(spec, "a", frame, payload, plans) == standalone
    assert standalone.rows == 0
    assert profile(spec, rows, payload, plans).quarantined == 1

    write_partition(tmp_path, "b", [_row(1), _row(1, v="y")])
    raw = read_output(spark, spec, "b")
    rows = parse_event_time(spec, raw).withColumn(REASON, reason_column(spec, None))
    with pytest.raises(WaterlineError, match=r"duplicate keys.*\(id=1\) x2"):
        profile_checking_duplicates(spec, "b", rows, payload, plans)


def test_statistics_leaf_of_a_struct_skips_types_without_statistics():
    from pyspark.sql.types import BinaryType, LongType, MapType, StringType, StructField, StructType

    from waterline.engine.tables.spark_tables import _first_leaf

    inner = StructType([StructField("bin", BinaryType()), StructField("x", LongType())])
    column = StructField("s-t", StructType([StructField("m", MapType(StringType(), StringType())),
                                            StructField("n", inner)]))
    assert _first_leaf(column) == "`s-t`.n.x"
    assert _first_leaf(StructField("a", LongType())) is None  # not a struct: listed by name if at all
    assert _first_leaf(StructField("b", StructType([StructField("m", MapType(StringType(), StringType()))]))) is None


def test_a_tier_added_after_ingest_is_refused_until_applied(spark, tmp_path):
    """The first ingest records the applied spec (version 1); a tier added later makes ingest
    and release refuse the spec until it is applied, so nothing publishes a tier that silently
    misses rows. A feed with no recorded spec (written before it was recorded) meets the
    engine's own refusal, naming `waterline apply`; the apply schedules held for the new tier."""
    spec = make_spec(tmp_path, {"rt": "TRUE"})
    write_partition(tmp_path, "a", [_row(1), _row(2)])
    _feed(spark, spec).ingest("a")
    specs = DeltaTable(str(tmp_path / "wh" / "f" / "_wl_specs")).to_pyarrow_table().to_pylist()
    assert [(r["version"], r["changes"]) for r in specs] == [(1, "first ingest")]
    grown = make_spec(tmp_path, {"rt": "TRUE", "d15": TIERS["d15"]})
    for step in (lambda: _feed(spark, grown).ingest("a"),
                 lambda: _feed(spark, grown).release()):
        with pytest.raises(WaterlineError, match=r"differs from the applied spec \(version 1\): tier d15 added; "
                                                 r"run `waterline apply"):
            step()
    shutil.rmtree(tmp_path / "wh" / "f" / "_wl_specs")  # as a feed ingested before specs were recorded
    for step in (lambda: _feed(spark, grown).ingest("a"),
                 lambda: _feed(spark, grown).release()):
        with pytest.raises(WaterlineError, match=r"tier\(s\) d15 added after data was ingested.*waterline apply"):
            step()
    assert _held(spark, spec).count() == 2
    assert read_tier(spark, spec, "rt") == {}
    applied, _ = _feed(spark, grown).apply()
    assert applied.version == 1
    _feed(spark, grown).release()
    assert len(read_tier(spark, grown, "d15")) == 2


def test_a_held_table_with_the_older_text_row_hash_keeps_it_and_still_diffs(spark, tmp_path):
    """Held tables written before the struct row hash stored it as 32 hex digits; ingest keeps
    writing that form there, and the diff still tells unchanged rows from changed ones."""
    from pyspark.sql import functions as F

    spec = make_spec(tmp_path, TIERS)
    write_partition(tmp_path, "a", [_row(1), _row(2)])
    _feed(spark, spec).ingest("a")
    old_stats = "_wl_seq,_wl_tau__rt,_wl_last__rt,_wl_tau__d15,_wl_last__d15"  # what such tables list
    spark.sql(f"ALTER TABLE delta.`{spec.held_path}` SET TBLPROPERTIES ('delta.dataSkippingStatsColumns' = '{old_stats}')")
    held = _held(spark, spec)
    text = F.concat(F.lpad(F.hex("_wl_hash.h1"), 16, "0"), F.lpad(F.hex("_wl_hash.h2"), 16, "0"))
    (held.withColumn("_wl_hash", text).write.format("delta").mode("overwrite")
     .option("overwriteSchema", "true").partitionBy("_wl_partition").save(spec.held_path))

    write_partition(tmp_path, "a", [_row(1), _row(2, v="y"), _row(3)])
    result = _feed(spark, spec).ingest("a")
    assert (result.inserted, result.updated, result.unchanged) == (1, 1, 1)
    assert _held(spark, spec).schema["_wl_hash"].dataType.simpleString() == "string"
