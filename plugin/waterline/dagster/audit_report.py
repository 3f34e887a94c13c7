"""``[feed, "audit_report"]``: the release proof of every retained commit, as a report asset.

Materialized by ``<feed>_audit`` (beside the ``released_on_time`` checks) or from the UI. Each
materialization proves every tier's retained history (`waterline.Feed.audit_history`: what
``maintain`` proved and kept, and the commits since from the change data feed), writes the page
`waterline audit --html` writes into the Dagster instance's storage folder, and carries:

* ``summary``: a table, one row per tier (commits, rows released and deleted, least margin,
  breaches, unproven ranges, verdict);
* ``report``: the page's path (timelines of due versus committed, breaches, entitlement changes);
* per tier ``<tier>/least_margin_seconds``, ``<tier>/breaches`` and ``<tier>/commits``: numbers,
  which the asset's Plots tab draws across materializations;
* ``verdict``: ``clean``, ``BREACH`` or ``not proven``.

The report does not fail on a breach: it says what happened. The ``released_on_time`` check is
what fails.
"""

# no `from __future__ import annotations`: Dagster reads the context annotation at definition time

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    multi_asset,
)

from waterline.dagster.resources import RESOURCE_KEY, WaterlineResource
from waterline.dagster.translator import AUDIT_REPORT, WaterlineTranslator
from waterline.engine.core.results import TierProof, feed_verdict
from waterline.reports import audit_page, audit_summary
from waterline.sharing.tokens import TokenStore, default_store_path
from waterline.spec import FeedSpec

_COLUMNS = [("tier", "string"), ("commits", "int"), ("rows_released", "int"), ("deleted", "int"),
            ("least_margin_s", "string"), ("breaches", "int"), ("unproven", "int"), ("verdict", "string")]


def report_folder(storage_directory: str, feed: str) -> Path:
    """Where a Dagster instance keeps a feed's audit pages."""
    return Path(storage_directory) / "waterline_reports" / feed


def build_audit_report_asset(spec: FeedSpec, translator: WaterlineTranslator, *,
                             resource_key: str = RESOURCE_KEY) -> AssetsDefinition:
    """The feed's audit report asset (its spec from ``translator.get_asset_spec(spec, "audit_report")``)."""
    asset_spec = translator.get_asset_spec(spec, AUDIT_REPORT)

    @multi_asset(name=f"{spec.feed}_audit_report", specs=[asset_spec], required_resource_keys={resource_key})
    def _audit_report(context: AssetExecutionContext):
        resource: WaterlineResource = getattr(context.resources, resource_key)
        feed = resource.get_feed(spec)
        now = feed.clock.now_us()
        proofs = feed.audit_history()
        events = TokenStore(default_store_path(spec)).trail.events()
        folder = report_folder(context.instance.storage_directory(), spec.feed)
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / f"audit-{context.run.run_id}.html"
        page.write_text(audit_page(spec.feed, proofs, events, generated_us=now, specs=feed.spec_versions()), encoding="utf-8")
        context.log.info(f"audit {spec.feed}: " + "; ".join(f"{tier} {p.verdict} ({len(p.releases)} commits)"
                                                            for tier, p in proofs.items()) + f"; page {page}")
        yield MaterializeResult(asset_key=asset_spec.key, metadata=report_metadata(proofs, page))

    return _audit_report


def report_metadata(proofs: Mapping[str, TierProof], page: Path) -> dict[str, Any]:
    """The materialization's metadata: the proofs' `audit_summary` rows, the feed's verdict and the page's path."""
    summary = audit_summary(proofs)
    out: dict[str, Any] = {
        "summary": MetadataValue.table(
            # a record's fields are all present and never None: a tier with no timed release shows "-"
            records=[TableRecord({k: "-" if v is None else str(v) if k == "least_margin_s" else v
                                  for k, v in r.items()}) for r in summary],
            schema=TableSchema(columns=[TableColumn(name=n, type=t) for n, t in _COLUMNS])),
        "report": MetadataValue.path(str(page)),
        "verdict": MetadataValue.text(feed_verdict(proofs.values())),
    }
    for r in summary:
        out[f"{r['tier']}/commits"] = MetadataValue.int(r["commits"])
        out[f"{r['tier']}/breaches"] = MetadataValue.int(r["breaches"])
        if r["least_margin_s"] is not None:
            out[f"{r['tier']}/least_margin_seconds"] = MetadataValue.float(float(r["least_margin_s"]))
    return out
