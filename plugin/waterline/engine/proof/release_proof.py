"""The release proof of a tier: when each row a commit released became due, against when it committed.

One Spark pass per tier over the change data feed of the commits in range. For every row a
commit inserted or updated, the instant it became due is recomputed from the row's own
payload and the tier's policy in force when the commit was released (the policy of the spec
version the commit names, `waterline.engine.proof.spec_versions`; the interval of its
visibility that holds the commit's W_T: `waterline.semantics.due_since`), not read back from
the ``_wl_start`` / ``_wl_end`` the release wrote. The commit's time is the earlier of the store's time of its
commit file (set by the object store, not by waterline's clock) and the writer's
``commitInfo.timestamp``; a row committed before it was due is a breach, and so is a row the
commit shows at a W_T its policy does not show it at. Deleted rows are listed with the
instant they had to go (an expiry) and are never early: withdrawing a row leaks nothing.
An update whose post-image is the version its pre-image already showed (same identity,
``_wl_seq`` and payload: only ``_wl_start`` / ``_wl_end`` rewritten, e.g. a row kept by an
apply that lengthened a delay, or a version shown again in a later interval) releases
nothing and is not judged: it is counted as an update and listed as a ``rewrite``, never a
breach and never a margin.
Any other update (a new version, or a payload changed by hand under the same seq) is judged
like an insert.

A commit by another writer that changes rows (a RESTORE, a DELETE by hand) is proven like a
release, at the newest W_T recorded at or before it. Commits the proof cannot see are named,
never passed: versions cleaned from the log, and versions written before the tier's change
data feed was on.

`maintain` proves each tier's new commits before it vacuums and keeps the proofs
(`waterline.engine.proof.kept_proofs`); the proof takes the commits kept as they were kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from waterline.engine.core import columns as C
from waterline.engine.core.results import Breach, ReleaseProof, TierProof
from waterline.engine.proof.commit_record import CommitRecord, change_data_missing, change_feed_since, commit_records
from waterline.engine.proof.kept_proofs import KeptProofs, kept_proofs_path
from waterline.engine.proof.spec_versions import judged_by, tier_policies
from waterline.engine.delta.table_log import TableLog
from waterline.engine.tables import applied_spec
from waterline.engine.tables.schedule import compile_tiers
from waterline.policy import ReleasePlan, vis_sql
from waterline.semantics import NEG_INF
from waterline.spec import FeedSpec

#: Breaches listed in full (the counts per release are always whole).
MAX_BREACHES = 1000

_VERSION, _TYPE = "_commit_version", "_change_type"
_CDF_COLUMNS = {_VERSION, _TYPE, "_commit_timestamp"}
_W, _AT, _POLICY = "_wl_proof_w", "_wl_proof_committed", "_wl_proof_policy"
_SHOWN, _NEXT, _GONE = "_wl_proof_shown_since", "_wl_proof_next", "_wl_proof_gone_at"
_SAME, _PRE = "_wl_proof_same_version", "_wl_proof_pre_"
_RELEASED = ("insert", "update_postimage")


def prove_tier(spark: SparkSession, spec: FeedSpec, tier: str, *, from_us: int | None = None,
               to_us: int | None = None, plans: Mapping[str, ReleasePlan] | None = None,
               with_rows: bool = False) -> tuple[TierProof, Mapping[str, ReleasePlan] | None]:
    """The proof of ``tier``'s commits that committed in ``[from_us, to_us]`` (default: every
    retained one), and the compiled plans (pass them back in for the next tier): the commits
    `keep_proofs` kept as they were kept, the later ones from the change data feed.
    ``with_rows``: also every change of the later ones with its due instant (tests)."""
    kept = KeptProofs(kept_proofs_path(spec.feed_dir)).of(tier)
    live, plans, _ = _prove(spark, spec, tier, kept.through, window=(from_us, to_us), plans=plans,
                            with_rows=with_rows)
    if kept.through < 0:
        return live, plans
    old = kept.within(from_us, to_us)
    return TierProof(tier=tier, exists=live.exists, releases=old.releases + live.releases,
                     breaches=old.breaches + live.breaches,
                     unproven=tuple(sorted([u[:3] for u in old.unproven] + list(live.unproven))),
                     rows=live.rows), plans


def keep_proofs(spark: SparkSession, spec: FeedSpec, tier: str,
                plans: Mapping[str, ReleasePlan] | None = None) -> tuple[int, Mapping[str, ReleasePlan] | None]:
    """Prove ``tier``'s commits since the last kept proof and keep them (`maintain` does, before
    it vacuums the change data a proof reads); the number of commits proven."""
    store = KeptProofs(kept_proofs_path(spec.feed_dir))
    kept = store.of(tier)
    proof, plans, newest = _prove(spark, spec, tier, kept.through, plans=plans)
    if newest is not None and newest > kept.through:
        store.keep(proof, through=newest)
    return len(proof.releases), plans


def _prove(spark: SparkSession, spec: FeedSpec, tier: str, after: int, *,
           window: tuple[int | None, int | None] = (None, None), plans: Mapping[str, ReleasePlan] | None = None,
           with_rows: bool = False) -> tuple[TierProof, Mapping[str, ReleasePlan] | None, int | None]:
    """The proof from the change data feed of the commits after version ``after`` that
    committed in ``window`` (from_us, to_us; None: unbounded), the plans, and the newest
    version examined (None: no table)."""
    from_us, to_us = window
    log = TableLog.open(spec.kept_tier_path(tier))  # a retired tier's releases are proven too
    if not log.exists:
        return TierProof(tier=tier, exists=False), plans, None
    records, rebuildable_from = commit_records(log)
    # before rebuildable_from no reader can rebuild a state to read changes in
    records = {v: c for v, c in records.items() if v >= (rebuildable_from or 0)}
    retained = sorted(records)
    newest = retained[-1] if retained else after
    unproven: list[tuple[int, int, str]] = []
    if retained and retained[0] > after + 1 and (from_us is None or records[retained[0]].committed_us > from_us):
        unproven.append((after + 1, retained[0] - 1, "cleaned from the log"))
    proofs = {v: p for v, p in _proofs(records, from_us, to_us).items() if v > after}
    cdf_from = change_feed_since(log, retained)
    changing = [v for v in sorted(proofs) if records[v].changes_rows]
    blind = [v for v in changing if cdf_from is None or v < cdf_from]
    if blind:
        unproven.append((blind[0], blind[-1], "written before the tier's change data feed was on"))
    seen = [v for v in changing if v not in set(blind)]
    vacuumed = set(change_data_missing(log, seen))
    unproven += [(a, b, "change data vacuumed (past the tier's maintenance.time_travel)") for a, b in _runs(vacuumed)]
    provable = [v for v in seen if v not in vacuumed]
    if not provable:
        return TierProof(tier=tier, exists=True, releases=tuple(proofs[v] for v in sorted(proofs)),
                         unproven=tuple(sorted(unproven))), plans, newest
    changes = _change_feed(spark, log.path, provable, [C.PARTITION, *spec.key])
    payload = [c for c in changes.columns if not C.is_system(c) and c not in _CDF_COLUMNS and c != _SAME]
    if plans is None:
        plans = compile_tiers(spark, spec, changes.select(*payload))
    judged, policy_of, vis = _in_force(spark, spec, tier, {v: records[v] for v in provable},
                                       (plans.get(tier), changes.select(*payload)))
    at = spark.createDataFrame([(v, proofs[v].w_us, proofs[v].committed_us, policy_of[v]) for v in provable],
                               f"{_VERSION} BIGINT, {_W} BIGINT, {_AT} BIGINT, {_POLICY} INT")
    proofs.update({v: proofs[v].evolve(spec=judged[v]) for v in provable})
    dated = _with_due(changes.join(F.broadcast(at), on=_VERSION), vis)
    released = F.col(_TYPE).isin(*_RELEASED) & ~F.col(_SAME)
    # committed_us is an exclusive upper bound: at or before due, the commit was certainly early
    breach = released & (F.col(_SHOWN).isNull() | (F.col(_AT) <= F.col(_SHOWN)))
    margin = F.when(released & (F.col(_SHOWN) > NEG_INF), F.col(_AT) - F.col(_SHOWN))
    for r in dated.groupBy(_VERSION).agg(
        F.count(F.when(F.col(_TYPE) == "insert", 1)).alias("inserted"),
        F.count(F.when(F.col(_TYPE) == "update_postimage", 1)).alias("updated"),
        F.count(F.when(F.col(_TYPE) == "delete", 1)).alias("deleted"),
        F.min(margin).alias("margin"),
        F.count(F.when(breach, 1)).alias("breaches"),
    ).collect():
        v = int(r[_VERSION])
        proofs[v] = proofs[v].evolve(inserted=int(r["inserted"]), updated=int(r["updated"]), deleted=int(r["deleted"]),
                                     breaches=int(r["breaches"]),
                                     min_margin_us=None if r["margin"] is None else int(r["margin"]))
    keys = [C.PARTITION, *spec.key]
    listed = dated.select(_VERSION, _TYPE, *keys, C.SEQ, F.coalesce(_SHOWN, _NEXT).alias("due"), _GONE, _AT, _W,
                          _SAME, breach.alias("breach"))
    breaches = () if not any(p.breaches for p in proofs.values()) else tuple(
        Breach(tier=tier, version=int(r[_VERSION]), key=tuple(r[k] for k in keys), seq=int(r[C.SEQ]),
               change=_change(r[_TYPE]), due_us=r["due"], committed_us=int(r[_AT]), w_us=r[_W])
        for r in listed.filter("breach").orderBy(_VERSION, *keys).limit(MAX_BREACHES).collect())
    rows = () if not with_rows else tuple(
        (int(r[_VERSION]), "rewrite" if r[_SAME] else _change(r[_TYPE]), tuple(r[k] for k in keys), int(r[C.SEQ]),
         r["due"] if r[_TYPE] in _RELEASED else r[_GONE])
        for r in listed.orderBy(_VERSION, *keys).collect())
    return TierProof(tier=tier, exists=True, releases=tuple(proofs[v] for v in sorted(proofs)),
                     breaches=breaches, unproven=tuple(sorted(unproven)), rows=rows), plans, newest


def _proofs(records: Mapping[int, CommitRecord], from_us: int | None, to_us: int | None) -> dict[int, ReleaseProof]:
    """A proof (no rows counted yet) per commit in range that records a W_T or changes rows;
    another writer's commit is judged at the newest W_T recorded at or before it."""
    out: dict[int, ReleaseProof] = {}
    w: int | None = None
    for version in sorted(records):
        c = records[version]
        w = c.w_us if c.w_us is not None else w
        if (from_us is not None and c.committed_us < from_us) or (to_us is not None and c.committed_us > to_us):
            continue
        if c.w_us is not None or c.changes_rows:
            out[version] = ReleaseProof(version=version, committed_us=c.committed_us, writer_us=c.writer_us,
                                        store_us=c.store_us, w_us=w, seq=c.seq, operation=c.operation)
    return out


def _runs(versions: set[int]) -> list[tuple[int, int]]:
    """Sorted versions as ``(first, last)`` runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for v in sorted(versions):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _change_feed(spark: SparkSession, path: str, versions: list[int], keys: list[str]) -> DataFrame:
    """The change rows of ``versions`` (no update pre-images), each with ``_SAME``: an update
    whose post-image is its pre-image's version (see the module). One read per run of
    consecutive versions, since a read of a range needs every file of every version in it."""
    reads = [spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", a)
             .option("endingVersion", b).load(path) for a, b in _runs(set(versions))]
    out = reads[0]
    for more in reads[1:]:
        out = out.unionByName(more)
    out = out.filter(F.col(_VERSION).isin(versions))
    # the version's identity: its seq and every payload column (a hand edit under the same seq is judged)
    same = [C.SEQ, *(c for c in out.columns if not C.is_system(c) and c not in _CDF_COLUMNS)]
    types = {f.name: f.dataType for f in out.schema.fields}
    pre = (out.filter(F.col(_TYPE) == "update_preimage")
           .select(_VERSION, *keys, *(F.col(c).alias(_PRE + c) for c in same))
           .dropDuplicates([_VERSION, *keys]))  # one pre-image per identity and commit
    kept = F.lit(True)
    for c in same:
        kept = kept & _comparable(c, types[c]).eqNullSafe(_comparable(_PRE + c, types[c]))
    same_version = (F.col(_TYPE) == "update_postimage") & F.col(_PRE + C.SEQ).isNotNull() & kept
    return (out.filter(F.col(_TYPE) != "update_preimage").join(pre, on=[_VERSION, *keys], how="left")
            .withColumn(_SAME, F.coalesce(same_version, F.lit(False)))
            .drop(*(_PRE + c for c in same)))


def _comparable(column: str, kind: DataType) -> Column:
    """``column`` in a form `<=>` compares: Spark has no equality on maps (at any depth), so a
    value holding one is compared as its JSON text. Entry order counts there: a map rewritten
    in another order reads as a changed payload, which is judged (never a release missed)."""
    if _has_map(kind):
        return F.to_json(F.struct(F.col(column).alias("v")))
    return F.col(column)


def _has_map(kind: DataType) -> bool:
    if isinstance(kind, MapType):
        return True
    if isinstance(kind, ArrayType):
        return _has_map(kind.elementType)
    if isinstance(kind, StructType):
        return any(_has_map(f.dataType) for f in kind.fields)
    return False


def _with_due(changes: DataFrame, vis_sql: str) -> DataFrame:
    """Each change with, from its payload's visibility ``vis`` and the commit's W_T ``w``:
    the start of the interval of ``vis`` that holds ``w`` (NULL: not shown at ``w``), the
    next start after ``w`` (when it would be due), and the last end at or before ``w`` (when
    a row no longer shown had to go; NEG_INF: at once, replaced or removed)."""
    w = F.col(_W)
    vis = F.expr(vis_sql)

    def starts(keep: Callable[[Column], Column]) -> Column:
        return F.array_min(F.transform(F.filter(vis, keep), lambda x: x["start"]))

    shown_since = starts(lambda x: (x["start"] <= w) & (w < x["end"]))
    next_start = starts(lambda x: x["start"] > w)
    gone_at = F.when(shown_since.isNull(), F.array_max(F.transform(F.filter(vis, lambda x: x["end"] <= w),
                                                                   lambda x: x["end"])))
    return (changes.withColumn(_SHOWN, shown_since).withColumn(_NEXT, next_start)
            .withColumn(_GONE, F.coalesce(gone_at, F.lit(NEG_INF))))


def _in_force(spark: SparkSession, spec: FeedSpec, tier: str, records: Mapping[int, CommitRecord],
              today: tuple[ReleasePlan | None, DataFrame]) -> tuple[dict[int, int | None], dict[int, int], str]:
    """The policy each commit is judged by: the spec version it names (by version), the index
    of its policy among those in force over ``records`` (by version), and the SQL of a
    change's visibility under its commit's policy (the ``_POLICY``-th). ``today``: the tier's
    plan compiled from the spec file (None: a retired tier), and the payload frame to compile
    earlier policies on."""
    plan, payload = today
    history = applied_spec.history(spec)
    judged = judged_by(records, history)
    texts = tier_policies(spec, tier, set(judged.values()), history)
    policies = sorted(set(texts.values()))  # each compiled once
    vis = [vis_sql(plan) if plan is not None and text == spec.tiers.get(tier) else
           vis_sql(compile_tiers(spark, spec, payload, policies={tier: text})[tier]) for text in policies]
    sql = vis[0] if len(vis) == 1 else f"CASE {_POLICY} " + " ".join(
        f"WHEN {i} THEN ({v})" for i, v in enumerate(vis)) + " END"
    return judged, {v: policies.index(texts[judged[v]]) for v in records}, sql


def _change(change_type: str) -> str:
    return {"insert": "insert", "update_postimage": "update", "delete": "delete"}[change_type]

