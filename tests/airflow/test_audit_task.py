"""`WaterlineAuditOperator`'s account of a proof: the task log's lines and its one-line failure.

The proofs here are the engine's result types as `Feed.audit_history` returns them; the task
run against a real feed is in tests/airflow/test_dags_test.py, breaches found by a real proof
in tests/engine/test_proof.py.
"""

from __future__ import annotations

from waterline.airflow.operators import audit_failure, proof_lines
from waterline.engine.core.results import Breach, ReleaseProof, TierProof

US = 1_000_000
DUE = 1_767_225_600 * US  # 2026-01-01T00:00:00Z


def _release(version: int, *, margin: int | None, breaches: int = 0) -> ReleaseProof:
    return ReleaseProof(version=version, committed_us=DUE + version, writer_us=DUE, store_us=DUE, w_us=DUE, seq=1,
                        operation="WRITE", inserted=2, min_margin_us=margin, breaches=breaches)


def test_a_clean_proof_passes_and_says_what_it_proved():
    proofs = {"rt": TierProof(tier="rt", exists=True, releases=(_release(1, margin=None),)),
              "emb": TierProof(tier="emb", exists=True, releases=(_release(1, margin=2 * US), _release(2, margin=US))),
              "new": TierProof(tier="new", exists=False)}
    assert audit_failure("f", proofs) is None
    assert proof_lines("f", proofs) == [
        "audit f/rt: 1 commits, 2 rows released, least margin none, 0 breaches",
        "audit f/emb: 2 commits, 4 rows released, least margin 1.000 s, 0 breaches",
        "audit f/new: 0 commits, 0 rows released, least margin none, 0 breaches (no table yet)",
    ]


def test_a_breach_or_an_unproven_range_fails_in_one_line_naming_the_tiers():
    early = Breach(tier="emb", version=2, key=("a", 7), seq=3, change="insert", due_us=DUE + 60 * US,
                   committed_us=DUE, w_us=DUE + 3600 * US)
    proofs = {"emb": TierProof(tier="emb", exists=True, releases=(_release(2, margin=-60 * US, breaches=1),),
                               breaches=(early,)),
              "d10": TierProof(tier="d10", exists=True, unproven=((0, 4, "cleaned from the log"),))}
    failure = audit_failure("f", proofs)
    assert failure == ("audit f: 1 row(s) of tier emb released before they were due; "
                       "tier d10 has commits the proof could not see (see the task log)")
    assert "\n" not in failure
    lines = proof_lines("f", proofs)
    assert ("BREACH f/emb v2 insert ('a', 7) (seq 3): due 2026-01-01T00:01:00Z, "
            "committed before 2026-01-01T00:00:00Z") in lines
    assert "not proven f/d10 versions 0-4: cleaned from the log" in lines
