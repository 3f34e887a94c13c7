"""How feeds map to Dagster: the one place to customise asset keys, specs and groups.

The pattern of dagster-dbt's ``DagsterDbtTranslator`` and dagster-sling's
``DagsterSlingTranslator``: `get_asset_spec` builds each table's whole
``AssetSpec`` (key, deps, group, description, kinds, tags, metadata, freshness,
partitions) from the smaller ``get_*`` methods, so a subclass overrides one
attribute, or the whole spec.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dagster import AssetKey, AssetSpec

from waterline.dagster.freshness import expected_lag_seconds, tier_freshness_policy
from waterline.dagster.partitions import partitions_def_for
from waterline.spec import FeedSpec
from waterline.spec.release_part import normal_policy

HELD = "held"
#: The audit report asset (`waterline.dagster.audit_report`): ``[feed, "audit_report"]`` by default.
AUDIT_REPORT = "audit_report"
KINDS = {"spark", "delta"}


class WaterlineTranslator:
    """Maps a feed's tables to Dagster asset specs.

    Subclass and pass an instance to ``definitions_from_specs(..., translator=)``, or
    return one from ``get_translator`` in a subclass of the ``ReleaseFeed`` Component.
    ``table`` is ``"held"``, a tier name or ``"audit_report"``. Job,
    sensor and check names keep the feed name (``<feed>_release``,
    ``<feed>_release_sensor``) whatever the keys are.
    """

    def get_asset_spec(self, spec: FeedSpec, table: str) -> AssetSpec:
        """The ``AssetSpec`` of ``table``: ``[feed, "held"]`` is partitioned like the spec (a
        stream feed's is not: it is materialized by draining its topics); each tier depends
        on the held asset and carries its freshness policy."""
        held = table == HELD
        if table == AUDIT_REPORT:
            return AssetSpec(
                key=self.get_asset_key(spec, table),
                deps=[self.get_asset_key(spec, tier) for tier in spec.tiers],
                group_name=self.get_group_name(spec),
                description=self.get_description(spec, table),
                kinds={"spark", "html"},
                tags=self.get_tags(spec, table),
                metadata=self.get_metadata(spec, table),
            )
        return AssetSpec(
            key=self.get_asset_key(spec, table),
            deps=[] if held else [self.get_asset_key(spec, HELD)],
            group_name=self.get_group_name(spec),
            description=self.get_description(spec, table),
            kinds=set(KINDS) | ({"kafka"} if held and spec.is_stream else set()),
            tags=self.get_tags(spec, table),
            metadata=self.get_metadata(spec, table),
            freshness_policy=None if held else tier_freshness_policy(spec, table),
            partitions_def=partitions_def_for(spec) if held and not spec.is_stream else None,
            code_version=self.get_code_version(spec, table),
        )

    def get_code_version(self, spec: FeedSpec, table: str) -> str | None:
        """A tier's code version: the hash of its normalised policy, so the UI shows a changed
        policy as a code change (reformatting it is none); None for the held table."""
        if table not in spec.tiers:
            return None
        return hashlib.sha256(normal_policy(spec.tiers[table]).encode()).hexdigest()[:16]

    def get_asset_key(self, spec: FeedSpec, table: str) -> AssetKey:
        return AssetKey([spec.feed, table])

    def get_group_name(self, spec: FeedSpec) -> str | None:
        return spec.feed

    def get_description(self, spec: FeedSpec, table: str) -> str:
        if table == AUDIT_REPORT:
            text = (f"The release proof of feed `{spec.feed}`: every retained release commit of every tier, each "
                    "row against the instant it became due; the page and a summary per tier.")
        elif table == HELD:
            text = (
                f"Versions of feed `{spec.feed}` and their release schedules (the held table). "
                "Materializing a partition processes it and appends what changed."
            )
        else:
            text = (
                f"Tier `{table}` of feed `{spec.feed}`: the rows this audience may see now. "
                f"Release policy: `{spec.tiers[table]}`."
            )
        return f"{spec.description}\n\n{text}" if spec.description else text

    def get_tags(self, spec: FeedSpec, table: str) -> dict[str, str]:
        return {"waterline/feed": spec.feed, "waterline/table": table}

    def get_metadata(self, spec: FeedSpec, table: str) -> dict[str, Any]:
        if table == HELD:
            return {"dagster/uri": spec.held_path, "waterline/feed": spec.feed}
        if table == AUDIT_REPORT:
            return {"waterline/feed": spec.feed}
        lag = expected_lag_seconds(spec, table)
        return {"dagster/uri": spec.tier_path(table), "waterline/policy": spec.tiers[table]} | (
            {} if lag is None else {"waterline/expected_lag_seconds": lag})
