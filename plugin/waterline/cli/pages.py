"""`--html`: write a report page and say where (stderr, so --json on stdout stays parseable)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from waterline.clock import SystemClock, parse_instant
from waterline.engine.core.results import TierProof
from waterline.feed import Feed
from waterline.reports import audit_page, usage_page
from waterline.sharing.tokens import TokenStore, default_store_path
from waterline.sharing.usage import UsageReport


def write_audit_page(feed: Feed, proofs: Mapping[str, TierProof], path: str, *, from_: str | None,
                     to: str | None) -> None:
    """The audit's page, with the entitlement changes of the feed's default token store."""
    now = SystemClock().now_us()
    events = TokenStore(default_store_path(feed.spec)).trail.events()
    text = audit_page(feed.name, proofs, events, generated_us=now,
                      from_us=None if from_ is None else parse_instant(from_, now_us=now),
                      to_us=None if to is None else parse_instant(to, now_us=now), specs=feed.spec_versions())
    _write(path, text)


def write_usage_page(report: UsageReport, events: Sequence[Mapping[str, Any]], path: str, *, source: str) -> None:
    _write(path, usage_page(report, events, generated_us=SystemClock().now_us(), source=f"the trail and access log beside {source}"))


def _write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")
    click.echo(f"wrote {path} ({len(text.encode()) // 1024:,} KiB)", err=True)
