"""One self-contained HTML page: plotly.js inlined once, the page's data as JSON, tables, figures."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

#: The ``id`` of the ``<script type="application/json">`` holding what the tool printed with --json.
DATA_ID = "waterline-data"
#: The ``id`` of the one holding the entitlement events drawn on the page.
EVENTS_ID = "waterline-events"

EVENT_COLORS = {"token_created": "#2b8a3e", "token_revoked": "#c92a2a", "token_expired": "#e67700",
                "audiences": "#1864ab"}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px 32px; color: #212529; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 28px; }
.meta { color: #495057; margin: 0 0 16px; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: 600; color: white; }
.clean { background: #2b8a3e; } .breach { background: #c92a2a; } .unproven { background: #e67700; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #dee2e6; padding: 4px 8px; text-align: left; }
th { background: #f1f3f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fff5f5; }
"""


def as_json(obj: Any) -> Any:
    """``obj`` as `json.dumps(..., default=str)` prints it and a reader parses it back: what
    the page carries and what its tables and figures are drawn from."""
    return json.loads(json.dumps(obj, default=str))


def instant(us: int | None) -> str:
    """An instant (µs since the epoch) as ISO 8601 UTC to the millisecond; "-" for None."""
    if us is None:
        return "-"
    return datetime.fromtimestamp(us / 1_000_000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def when(us: int) -> datetime:
    """An instant as a naive UTC datetime: plotly draws it on a date axis as given."""
    return datetime.fromtimestamp(us / 1_000_000, UTC).replace(tzinfo=None)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, numeric: Sequence[int] = (),
          bad: Sequence[bool] | None = None, cls: str = "") -> str:
    """An HTML table; cells are escaped, ``numeric`` columns right-aligned, ``bad`` rows tinted."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = "".join(f'<td{" class=num" if j in numeric else ""}>{html.escape("-" if v is None else str(v))}</td>'
                        for j, v in enumerate(row))
        body.append(f'<tr{" class=bad" if bad is not None and bad[i] else ""}>{cells}</tr>')
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def figure(fig: go.Figure, div_id: str) -> str:
    """A figure's ``<div>`` and the script that draws it (plotly.js comes once, in the head)."""
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 20, "t": 40, "b": 40})
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def event_label(e: Mapping[str, Any]) -> str:
    """One entitlement event in words."""
    if e["event"] == "audiences":
        return f"audiences of {e.get('feed')}: {e.get('audiences')}"
    return f"{e['event'].replace('_', ' ')}: {e.get('recipient')} ({e.get('token_id')})"


def page(title: str, sections: Sequence[str], data: Any, events: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole page: ``sections`` (HTML) in order; ``data`` and ``events`` carried as JSON."""
    def carried(value: Any) -> str:  # "</" would end the script element early
        return json.dumps(value, sort_keys=True).replace("</", "<\\/")

    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        *sections,
        f'<script type="application/json" id="{DATA_ID}">{carried(data)}</script>',
        f'<script type="application/json" id="{EVENTS_ID}">{carried(list(events))}</script>',
        "</body></html>",
    ])
