"""Row hashes are stored in every held table: they must never change from one waterline to the next.

An ingest compares the hash of each output row with the one its current version
stored; a hash computed differently would make every unchanged row look changed
(a new version of all of them) after an upgrade. These values were computed by
the first struct-hash implementation; any rewrite must reproduce them exactly.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_row_hashes_are_those_held_tables_already_store(spark):
    from pyspark.sql import functions as F

    from waterline.engine.ingest.profile import row_hash, row_hashes

    rows = spark.sql("""SELECT * FROM VALUES
        (1, 'a', CAST(1.5 AS DOUBLE), TIMESTAMP'2026-01-01 10:00:00', map('k', 1), CAST(NULL AS STRING)),
        (NULL, 'a', NULL, TIMESTAMP'2026-01-01 10:00:00', NULL, 'x'),
        (2, NULL, CAST(2.5 AS DOUBLE), NULL, map('a', 2, 'b', 3), 'y')
        AS t(id, s, d, ts, m, n)""")
    h1, h2 = row_hashes(rows, rows.columns)
    got = [tuple(r) for r in rows.select(h1, h2, row_hash(rows, rows.columns, as_text=True)).collect()]
    assert got == [
        (-7427675006068520754, 1988202693519849699, "98EB98EF7C3D08CE1B9783D0D8B9B8E3"),
        (-8108689819212488868, -7279824160877849788, "8F78259234035F5C9AF8DE7EEF91D344"),
        (-3941188357407145947, -175585363278789594, "C94E1611FBD78025FD90320ADA028426"),
    ]
    # More columns than one null mask holds (62): a second mask.
    wide = spark.range(2).select(*[F.when(F.col("id") == (i % 2), F.lit(i)).alias(f"c{i}") for i in range(70)])
    w1, w2 = row_hashes(wide, wide.columns)
    assert [tuple(r) for r in wide.select(w1, w2).collect()] == [
        (-1161654462706824024, -4280880013189087269), (-4271564744936471159, -6781733533022799870)]
