"""The month's usage as a page (`waterline report usage --html`).

Requests and rows served per recipient and tier, the month's entitlement changes on a
timeline (tokens created, revoked, expired, and the audiences each server start recorded),
and the report's tables: the rows an exchange's monthly declaration asks for, and the totals
per tier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from waterline.reports.page import EVENT_COLORS, as_json, event_label, figure, instant, page, table, when
from waterline.sharing.usage import UsageReport


def month_events(report: UsageReport, events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The trail's events within the report's month, with each token's expiry in the month
    as a ``token_expired`` event (the trail records a token's expiry when it is made)."""
    revoked_at = {e["token_id"]: e["at"] for e in events if e["event"] == "token_revoked"}
    out = [dict(e) for e in events if report.start_us <= e["at"] < report.end_us]
    for e in events:
        expires = e.get("expires")
        if (e["event"] == "token_created" and expires is not None and report.start_us <= expires < report.end_us
                and revoked_at.get(e["token_id"], expires) >= expires):
            out.append({"at": expires, "event": "token_expired", "recipient": e["recipient"],
                        "token_id": e["token_id"], "expires": None, "feed": None, "audiences": None})
    return sorted(out, key=lambda e: e["at"])


def usage_figure(report: UsageReport, events: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Requests and rows per recipient and tier (bars), and the month's entitlement changes."""
    fig = make_subplots(rows=1, cols=3, column_widths=[0.3, 0.3, 0.4], horizontal_spacing=0.07,
                        subplot_titles=("requests", "rows served", "entitlement changes"))
    labels = [f"{u.recipient} · {u.tier}" for u in report.rows]
    fig.add_trace(go.Bar(x=labels, y=[u.requests for u in report.rows], marker={"color": "#1c7ed6"},
                         name="requests", showlegend=False), row=1, col=1)
    fig.add_trace(go.Bar(x=labels, y=[u.rows for u in report.rows], marker={"color": "#37b24d"},
                         name="rows", showlegend=False), row=1, col=2)
    for kind, color in EVENT_COLORS.items():
        mine = [e for e in events if e["event"] == kind]
        if mine:
            fig.add_trace(go.Scatter(x=[when(e["at"]) for e in mine],
                                     y=[e.get("recipient") or f"audiences {e.get('feed')}" for e in mine],
                                     text=[event_label(e) for e in mine], mode="markers", name=kind.replace("_", " "),
                                     marker={"color": color, "size": 10, "symbol": "diamond"},
                                     hovertemplate="%{text}<br>%{x}<extra></extra>"), row=1, col=3)
    fig.update_xaxes(range=[when(report.start_us), when(report.end_us)], row=1, col=3)
    fig.update_layout(height=400, legend={"orientation": "h", "y": -0.25})
    return fig


def usage_page(report: UsageReport, events: Sequence[Mapping[str, Any]] = (), *, generated_us: int,
               source: str = "") -> str:
    """The page of `waterline report usage --html`; it carries the report as `--json` prints it
    and the month's entitlement events (``events``: the whole trail, oldest first)."""
    shown = month_events(report, events)
    sections = [
        f"<h1>Usage {report.month} (UTC)</h1>",
        (f'<p class="meta">{source + "; " if source else ""}the month from {instant(report.start_us)} to '
        f"{instant(report.end_us)}; generated {instant(generated_us)}. A day entitled: the recipient held a live "
        "token and its feed's audiences named the tier at some instant of the day. Requests: answered (200) table "
        "requests.</p>"),
        figure(usage_figure(report, shown), "usage"),
        "<h2>Per recipient and tier</h2>",
        table(["feed", "tier", "recipient", "days entitled", "days read", "requests", "rows", "versions",
               "first access", "last access"],
              [(u.feed, u.tier, u.recipient, u.days_entitled, u.days_read, u.requests, u.rows, u.versions,
                instant(u.first_access_us), instant(u.last_access_us)) for u in report.rows],
              numeric=(3, 4, 5, 6, 7), cls="usage"),
        "<h2>Totals per tier</h2>",
        table(["tier", "recipients entitled", "recipients reading", "requests", "rows"],
              [(t, v["recipients_entitled"], v["recipients_reading"], v["requests"], v["rows"])
               for t, v in sorted(report.totals.items())], numeric=(1, 2, 3, 4), cls="totals"),
        "<h2>Entitlement changes in the month</h2>",
        table(["at", "event"], [(instant(e["at"]), event_label(e)) for e in shown], cls="events")
        if shown else "<p>None.</p>",
    ]
    return page(f"waterline usage {report.month}", sections, as_json(asdict(report)), shown)
