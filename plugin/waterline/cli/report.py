"""`waterline report usage`: a month of entitlements and reads, per recipient and tier."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

import click

from waterline.cli.render import instant, table
from waterline.cli.share import _STORE, _specs, _store
from waterline.sharing.access_records import AccessRecords, access_path
from waterline.sharing.usage import usage_report
from waterline.extras import require

_COLUMNS = ["feed", "tier", "recipient", "days_entitled", "days_read", "requests", "rows", "versions",
            "first_access_us", "last_access_us"]


@click.group("report")
def report_group() -> None:
    """Reports for the people who answer for a feed's audiences."""


@report_group.command("usage")
@click.argument("specs", nargs=-1, required=True)
@click.option("--month", required=True, help="The month, YYYY-MM (UTC days).")
@click.option("--json", "fmt", flag_value="json", help="Machine-readable output.")
@click.option("--csv", "fmt", flag_value="csv", help="One CSV row per recipient and tier.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True),
              help="Also write the report as one self-contained page (charts, tables, entitlement changes).")
@_STORE
def usage(specs, month, fmt, html_file, store_path) -> None:
    """Per recipient and tier of SPEC...'s feeds: days entitled, days with reads, requests, rows
    and versions served, first and last access; totals per tier. From the entitlement trail and
    the sharing servers' access log beside the token store."""
    loaded = _specs(specs)
    store = _store(loaded, store_path)
    events = store.trail.events()
    report = usage_report(month, {s.feed: list(s.tiers) for s in loaded}, events,
                          AccessRecords(access_path(store.where)).records())
    if html_file:
        require("--html", "plotly")
        from waterline.cli.pages import write_usage_page  # import cost: plotly, only for --html

        write_usage_page(report, events, html_file, source=store.where)
    if fmt == "json":
        click.echo(json.dumps(asdict(report), indent=2))
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=_COLUMNS)
        writer.writeheader()
        for row in report.rows:
            writer.writerow(asdict(row))
        click.echo(out.getvalue().rstrip("\n"))
    else:
        click.echo(f"usage {report.month} (UTC), from {store.where}:")
        click.echo(table(["feed", "tier", "recipient", "days entitled", "days read", "requests", "rows", "versions",
                          "first access", "last access"],
                         [(u.feed, u.tier, u.recipient, u.days_entitled, u.days_read, u.requests, u.rows, u.versions,
                           instant(u.first_access_us), instant(u.last_access_us)) for u in report.rows]))
        click.echo(table(["tier", "recipients entitled", "recipients reading", "requests", "rows"],
                         [(t, v["recipients_entitled"], v["recipients_reading"], v["requests"], v["rows"])
                          for t, v in sorted(report.totals.items())]))
