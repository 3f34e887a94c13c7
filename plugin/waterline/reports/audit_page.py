"""The release proof as a page (`waterline audit --html`) and as the Dagster report's parts.

Per tier: a timeline of its release commits (x: when the commit happened, y: its least margin,
commit time minus the due instant of the row released closest to its due instant; a breach
is below zero and red), each breached row as a red cross, the entitlement changes of the
feed's recipients as dashed vertical lines, each applied spec version (a policy change:
commits after it are judged by its policies) as a solid purple line, the distribution of the
margins, and the tables of breaches, of what could not be proven and of the spec versions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from waterline.engine.core.results import TierProof, feed_verdict
from waterline.reports.page import EVENT_COLORS, as_json, event_label, figure, instant, page, table, when

if TYPE_CHECKING:
    from waterline.engine.tables.applied_spec import AppliedSpec

_SECOND = 1_000_000
_SPEC_COLOR = "#7048e8"
#: Entitlement changes drawn on one timeline at most (the table lists them all).
MAX_EVENT_LINES = 40
#: The page's style class of each feed verdict (`feed_verdict`).
_VERDICT_CLASS = {"clean": "clean", "BREACH": "breach", "not proven": "unproven"}


def audit_summary(proofs: Mapping[str, TierProof]) -> list[dict[str, Any]]:
    """One row per tier: commits, rows released and deleted, least margin (s), breaches,
    unproven ranges and the verdict (``clean``, ``BREACH``, ``not proven``, ``no table``)."""
    return [{"tier": tier, "commits": len(p.releases), "rows_released": p.rows_released, "deleted": p.rows_deleted,
             "least_margin_s": None if p.least_margin_us is None else round(p.least_margin_us / _SECOND, 3),
             "breaches": p.breach_count, "unproven": len(p.unproven), "verdict": p.verdict}
            for tier, p in proofs.items()]


def _feed_events(feed: str, events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The trail's events about ``feed``: its audiences, and tokens of recipients they ever named."""
    recipients: set[str] = set()
    for e in events:
        if e["event"] == "audiences" and e.get("feed") == feed:
            recipients |= set(json.loads(e.get("audiences") or "{}"))
    return [e for e in events if (e["event"] == "audiences" and e.get("feed") == feed)
            or (e["event"] != "audiences" and e.get("recipient") in recipients)]


def audit_figure(tier: str, proof: TierProof, events: Sequence[Mapping[str, Any]] = (),
                 specs: Sequence[AppliedSpec] = ()) -> go.Figure:
    """The tier's timeline of release margins (breaches red), breached rows, entitlement
    changes and applied spec versions (after the first) within the commits' span, and the
    margins' distribution."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.72, 0.28], horizontal_spacing=0.08,
                        subplot_titles=(f"{tier}: least margin of each release (commit - due)", "margins"))
    timed = [r for r in proof.releases if r.min_margin_us is not None]
    ok = [r for r in timed if not r.breaches]
    early = [r for r in timed if r.breaches]
    hover = "v%{customdata[0]} committed %{x}<br>margin %{y:.3f} s<br>W_T %{customdata[1]}<extra></extra>"

    def points(rs, name: str, color: str, symbol: str = "circle") -> go.Scatter:
        return go.Scatter(x=[when(r.committed_us) for r in rs], y=[r.min_margin_us / _SECOND for r in rs],
                          customdata=[[r.version, instant(r.w_us)] for r in rs], mode="markers", name=name,
                          marker={"color": color, "size": 7, "symbol": symbol}, hovertemplate=hover)

    fig.add_trace(points(ok, "release on time", "#1c7ed6"), row=1, col=1)
    fig.add_trace(points(early, "release with a breach", "#e03131"), row=1, col=1)
    dated = [b for b in proof.breaches if b.due_us is not None]
    fig.add_trace(go.Scatter(x=[when(b.committed_us) for b in dated],
                             y=[(b.committed_us - b.due_us) / _SECOND for b in dated],
                             text=[f"{b.change} {list(b.key)} seq {b.seq}, due {instant(b.due_us)}" for b in dated],
                             mode="markers", name="row released early",
                             marker={"color": "#c92a2a", "size": 10, "symbol": "x"},
                             hovertemplate="%{text}<br>margin %{y:.3f} s<extra></extra>"), row=1, col=1)
    fig.add_hline(y=0, line={"color": "#c92a2a", "dash": "dot", "width": 1}, row=1, col=1)
    if timed:
        first, last = min(r.committed_us for r in timed), max(r.committed_us for r in timed)
        for e in [e for e in events if first <= e["at"] <= last][:MAX_EVENT_LINES]:
            fig.add_vline(x=when(e["at"]), line={"color": EVENT_COLORS.get(e["event"], "#868e96"), "width": 1,
                                                 "dash": "dash"}, row=1, col=1)
            fig.add_trace(go.Scatter(x=[when(e["at"])], y=[0], mode="markers", showlegend=False,
                                     marker={"color": EVENT_COLORS.get(e["event"], "#868e96"), "size": 9,
                                             "symbol": "diamond"},
                                     hovertemplate=f"{event_label(e)}<br>%{{x}}<extra></extra>"), row=1, col=1)
        for a in [a for a in specs if a.version > 1 and first <= a.applied_us <= last]:
            _spec_line(fig, a)
    fig.add_trace(go.Histogram(x=[r.min_margin_us / _SECOND for r in timed], name="margins (s)",
                               marker={"color": "#1c7ed6"}, showlegend=False), row=1, col=2)
    fig.update_yaxes(title_text="seconds after due", row=1, col=1)
    fig.update_xaxes(title_text="commit time (UTC)", row=1, col=1)
    fig.update_xaxes(title_text="seconds after due", row=1, col=2)
    fig.update_layout(height=380, legend={"orientation": "h", "y": -0.2})
    return fig


def _spec_line(fig: go.Figure, a: AppliedSpec) -> None:
    """A policy change on the timeline: the instant spec version ``a`` took effect."""
    fig.add_vline(x=when(a.applied_us), line={"color": _SPEC_COLOR, "width": 2}, row=1, col=1)
    fig.add_trace(go.Scatter(x=[when(a.applied_us)], y=[0], mode="markers", showlegend=False,
                             marker={"color": _SPEC_COLOR, "size": 11, "symbol": "triangle-up"},
                             hovertemplate=f"spec version {a.version} applied: {a.changes}<br>%{{x}}<extra></extra>"),
                  row=1, col=1)


def audit_page(feed: str, proofs: Mapping[str, TierProof], events: Sequence[Mapping[str, Any]] = (), *,
               generated_us: int, from_us: int | None = None, to_us: int | None = None,
               specs: Sequence[AppliedSpec] = ()) -> str:
    """The page of `waterline audit --html`: the verdict, per tier a summary row, a timeline
    and the breaches and unproven ranges; ``events`` (the entitlement trail, oldest first)
    restricted to this feed; ``specs`` the feed's applied spec versions (`Feed.spec_versions`).
    It carries ``{tier: proof}`` as `waterline audit --json` prints it."""
    summary = audit_summary(proofs)
    mine = _feed_events(feed, events)
    overall = feed_verdict(proofs.values())
    verdict = f'<span class="verdict {_VERDICT_CLASS[overall]}">{overall}</span>'
    span = f"commits from {instant(from_us) if from_us else 'the first retained'} " \
           f"to {instant(to_us) if to_us else 'the last'}"
    sections = [
        f"<h1>Release proof: {feed} {verdict}</h1>",
        (f'<p class="meta">{span}; generated {instant(generated_us)}. Each row a commit released is '
        "due when its tier's policy in force at the commit (of the spec version it was released under), "
        "recomputed from the row, first shows it at the commit's W_T; "
        "a commit before that instant is a breach.</p>"),
        table(["tier", "commits", "rows released", "deleted", "least margin (s)", "breaches", "unproven ranges",
               "verdict"], [list(r.values()) for r in summary], numeric=(1, 2, 3, 4, 5, 6),
              bad=[r["verdict"] != "clean" for r in summary], cls="summary"),
    ]
    for i, (tier, proof) in enumerate(proofs.items()):
        sections.append(f"<h2>{tier}</h2>")
        if not proof.exists:
            sections.append("<p>No table yet.</p>")
            continue
        sections.append(figure(audit_figure(tier, proof, mine, specs), f"timeline-{i}"))
        if proof.breaches:
            sections.append(table(["version", "change", "key", "seq", "due", "committed before", "W_T"],
                                  [(b.version, b.change, list(b.key), b.seq, instant(b.due_us) if b.due_us is not None
                                    else "never, at its W_T", instant(b.committed_us), instant(b.w_us))
                                   for b in proof.breaches], numeric=(0, 3), bad=[True] * len(proof.breaches),
                                  cls="breaches"))
        if proof.unproven:
            sections.append(table(["first version", "last version", "not proven because"],
                                  proof.unproven, numeric=(0, 1), bad=[True] * len(proof.unproven), cls="unproven"))
    if specs:
        sections.append("<h2>Spec versions</h2>")
        sections.append("<p>Each commit is judged by the policies of the spec version it was released under.</p>")
        sections.append(table(["version", "applied", "changes"],
                              [(a.version, instant(a.applied_us), a.changes) for a in specs], numeric=(0,),
                              cls="specs"))
    if mine:
        sections.append("<h2>Entitlement changes</h2>")
        sections.append(table(["at", "event"], [(instant(e["at"]), event_label(e)) for e in mine], cls="events"))
    return page(f"waterline audit {feed}", sections, as_json({t: p.to_dict() for t, p in proofs.items()}), mine)
