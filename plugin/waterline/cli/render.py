"""Plain-text rendering of engine results for the terminal."""

from __future__ import annotations

from typing import Iterable, Sequence

from waterline.clock import format_duration, format_instant
from waterline.engine.core.results import feed_verdict


def indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [list(map(str, headers))] + [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def instant(us: int | None) -> str | None:
    return None if us is None else format_instant(us)


def ingest_line(r) -> str:
    seq = f"seq {r.seq}" if r.seq is not None else "no new versions"
    return (
        f"ingest {r.feed} {r.partition}: {seq}; read {r.rows_read}, inserted {r.inserted}, "
        f"updated {r.updated}, removed {r.removed}, unchanged {r.unchanged}, quarantined {r.quarantined}"
        + (f", late dropped {r.late_dropped}" if r.late_dropped else "")
    )


def release_table(result) -> str:
    head = f"release {result.feed}: W = {format_instant(result.w_us)} (held seq {result.seq})"
    rows = [
        (t.tier, instant(t.w_us), "hold" if t.held else t.released, t.updated, t.removed, t.expired,
         instant(t.next_due_us))
        for t in result.tiers.values()
    ]
    return head + "\n" + table(["tier", "W_T", "released", "updated", "removed", "expired", "next due"], rows)


def status_table(state) -> str:
    head = f"feed {state.feed}: now {format_instant(state.now_us)}, held seq {state.seq}"
    if state.event_w_us is not None:
        head += f", event waterline {format_instant(state.event_w_us)}"
    rows = [
        (t.tier, instant(t.w_us), None if t.lag_us is None else format_duration(t.lag_us), t.pending,
         instant(t.next_due_us), "due" if t.due else "", "hold" if t.hold else "")
        for t in state.tiers.values()
    ]
    return head + "\n" + table(["tier", "W_T", "lag", "pending", "next due", "due", "hold"], rows)


def proof_report(feed: str, proofs) -> str:
    """`waterline audit`: per tier its commits, rows released and deleted, the least margin
    (commit - due) and breaches; then each breach and each range that could not be proven."""
    rows, lines = [], []
    for tier, p in proofs.items():
        least = p.least_margin_us
        rows.append((tier, len(p.releases), p.rows_released, p.rows_deleted, None if least is None else _signed(least),
                     p.breach_count, p.verdict))
        if not p.exists:
            continue
        for b in p.breaches:
            due = "never, at its W_T" if b.due_us is None else format_instant(b.due_us)
            lines.append(f"BREACH {tier} v{b.version} {b.change} {b.key} (seq {b.seq}): due {due}, "
                         f"committed before {format_instant(b.committed_us)}, W_T {instant(b.w_us)}")
        shown = len(p.breaches)
        if p.breach_count > shown:
            lines.append(f"BREACH {tier}: {p.breach_count - shown} more (see --json or narrow --from/--to)")
        for first, last, why in p.unproven:
            lines.append(f"not proven {tier} versions {first}-{last}: {why}")
    head = f"audit {feed}: {'clean' if feed_verdict(proofs.values()) == 'clean' else 'NOT CLEAN'}"
    body = table(["tier", "commits", "rows released", "deleted", "least margin", "breaches", ""], rows)
    return "\n".join([head, body, *lines])


def _signed(us: int) -> str:
    return ("-" if us < 0 else "") + format_duration(abs(us))
