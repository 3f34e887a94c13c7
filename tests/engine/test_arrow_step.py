"""`waterline.engine.release.driver_step` against the oracle, with no JVM.

A random history of versions (revisions, removals, several visibility intervals or one,
stored as the engine stores them), a tier as released at (W0, S0), a step to (W, S):
the tier after applying the step's changes must be `waterline.semantics.tier_state`
at (W, S), the inserts and deletes those of `release_changes`, the change-data rows the
rows' before and after images, and the outlook the pending versions and next boundary
a brute force finds. The Spark path is held to the same oracle by the release
differential test, which also draws this path per release.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from waterline.engine.core import columns as C
from waterline.engine.release.driver_step import CHANGE_TYPE, StepBounds, desired_rows, step_outlook, tier_changes
from waterline.semantics import NEG_INF, POS_INF, Version, release_changes, tier_state, visibility

TIER = "t"
FILE = "_wl_file"
KEYS = [C.PARTITION, "k"]
VIS = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64())]))
HELD = pa.schema([(C.PARTITION, pa.string()), ("k", pa.float64()), ("v", pa.string()), (C.SEQ, pa.int64()),
                  (C.REMOVED, pa.bool_()), (C.vis(TIER), VIS), (C.tau(TIER), pa.int64()),
                  (C.last(TIER), pa.int64())])
TIER_SCHEMA = pa.schema([("k", pa.float64()), ("v", pa.string()), (C.PARTITION, pa.string()), (C.SEQ, pa.int64()),
                         (C.START, pa.int64()), (C.END, pa.int64())])

bound = st.one_of(st.integers(0, 30), st.sampled_from([NEG_INF, POS_INF]))
interval = st.tuples(bound, bound).filter(lambda i: i[0] < i[1])


@st.composite
def histories(draw):
    """Versions of a few identities (a NaN key among them) in two partitions, one per seq."""
    identities = draw(st.lists(st.tuples(st.sampled_from(["p0", "p1"]), st.sampled_from([0.0, 1.5, float("nan")])),
                               min_size=1, max_size=5, unique_by=lambda i: (i[0], repr(i[1]))))
    single = draw(st.booleans())  # a one-branch tier stores at most one interval, as NULL
    versions = []
    for seq in range(1, draw(st.integers(1, 8)) + 1):
        part, key = draw(st.sampled_from(identities))
        if draw(st.integers(0, 4)) == 0:
            versions.append(Version(identity=(part, key), seq=seq, payload=None))
            continue
        vis = visibility(draw(st.lists(interval, max_size=1 if single else 3)))
        versions.append(Version(identity=(part, key), seq=seq, payload={"v": f"s{seq}"}, vis={TIER: vis}))
    return versions, single


def stored(v: Version, single: bool) -> dict:
    """A version as a held row: `schedule_columns` / `removal_schedule`'s encoding."""
    vis = v.vis_for(TIER)
    tau = vis[0][0] if vis and not v.is_removal else NEG_INF
    last = NEG_INF if not vis else vis[-1][1] if vis[-1][1] < POS_INF else vis[-1][0] if vis[-1][0] > NEG_INF else NEG_INF
    stored_vis = [] if v.is_removal or not vis else None if single else [{"start": s, "end": e} for s, e in vis]
    return {C.PARTITION: v.identity[0], "k": v.identity[1], "v": None if v.is_removal else v.payload["v"],
            C.SEQ: v.seq, C.REMOVED: v.is_removal, C.vis(TIER): stored_vis, C.tau(TIER): tau, C.last(TIER): last}


def tier_rows(state: dict, w: int, files: list[str]) -> list[dict]:
    rows = []
    for n, ((part, key), v) in enumerate(sorted(state.items(), key=repr)):
        start, end = next(i for i in v.vis_for(TIER) if i[0] <= w < i[1])
        rows.append({"k": key, "v": v.payload["v"], C.PARTITION: part, C.SEQ: v.seq, C.START: start, C.END: end,
                     FILE: files[n % len(files)]})
    return rows


def as_set(rows: list[dict]) -> set:
    return {(r[C.PARTITION], repr(r["k"]), r["v"], r[C.SEQ], r[C.START], r[C.END]) for r in rows}


@settings(max_examples=400, deadline=None)
@given(histories(), st.integers(-1, 31), st.integers(0, 32), st.integers(0, 8), st.integers(0, 8),
       st.lists(st.sampled_from(["f1", "f2", "f3"]), min_size=1, max_size=3))
def test_a_step_applied_to_the_tier_gives_the_oracles_tier(history, w0, dw, s0, ds, files):
    versions, single = history
    w, s = w0 + dw, s0 + ds
    released = w0 >= 0  # w0 = -1: the tier was never released (empty, nothing taken for granted)
    s0 = s0 if released else 0
    before = tier_state(versions, TIER, w0, s0) if released else {}
    held = pa.Table.from_pylist([stored(v, single) for v in versions if v.seq <= s], schema=HELD)
    old = pa.Table.from_pylist(tier_rows(before, w0, files),
                               schema=pa.schema([*TIER_SCHEMA, pa.field(FILE, pa.string())]))
    bounds = StepBounds(tier=TIER, low=w0 if released else NEG_INF, s0=s0, w=w)

    desired = desired_rows(held, bounds, KEYS, partitions=["p0", "p1"], seq_floor=None)
    changes = tier_changes(desired, old, KEYS, TIER_SCHEMA, file_column=FILE)

    kept = [r for r in old.to_pylist() if r[FILE] not in set(changes.touched)]
    after = tier_state(versions, TIER, w, s)
    assert as_set(kept + changes.new_rows.to_pylist()) == as_set(tier_rows(after, w, ["-"]))
    inserted, _, removed = release_changes(before, after)
    actions = {a: sum(n for (x, _), n in changes.counts.items() if x == a) for a in ("insert", "delete")}
    assert (actions["insert"], actions["delete"]) == (len(inserted), len(removed))
    assert changes.new_rows.schema == TIER_SCHEMA
    if changes.cdc_rows is not None:  # before images of what changed, after images of what is new
        cdc = changes.cdc_rows.to_pylist()
        gone = {(r[C.PARTITION], repr(r["k"])) for r in cdc if r[CHANGE_TYPE] == "delete"}
        assert gone == {(p, repr(k)) for p, k in removed}
        new = {(r[C.PARTITION], repr(r["k"])) for r in cdc if r[CHANGE_TYPE] == "insert"}
        assert new == {(p, repr(k)) for p, k in inserted}
        pre = [r for r in cdc if r[CHANGE_TYPE] in ("update_preimage", "delete")]
        assert as_set(pre) <= as_set(old.to_pylist())
    else:
        assert not removed and not [k for k, n in changes.counts.items() if k[0] == "update" and n]


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(-1, 32))
def test_the_outlook_is_the_pending_versions_and_the_next_boundary(history, w):
    versions, single = history
    held = pa.Table.from_pylist([stored(v, single) for v in versions], schema=HELD)
    next_due, pending = step_outlook(held, TIER, w, pending=2, next_due=None)
    boundaries = [b for v in versions for i in v.vis_for(TIER) for b in i if w < b < POS_INF]
    assert pending == 2 + sum(1 for v in versions if v.tau(TIER) > w)
    assert next_due == min(boundaries, default=None)
