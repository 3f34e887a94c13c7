"""The one-line summary of a tier's release, as the Dagster and Airflow logs print it."""

from waterline.engine.results import TierRelease


def test_a_tier_release_summary_names_feed_tier_waterlines_and_counts():
    done = TierRelease(tier="emb", w_us=1_767_607_200_000_000, previous_w_us=None, seq=3, released=2, expired=1)
    assert done.summary("f") == ("f/emb: W_T 2026-01-05T10:00:00Z (was none); released 2, updated 0, removed 0, "
                                 "expired 1")
    held = TierRelease(tier="emb", w_us=None, previous_w_us=None, seq=0, held=True)
    assert held.summary("f").endswith("(on hold)") and "W_T none" in held.summary("f")
