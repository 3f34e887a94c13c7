"""How feeds map to Dagster names: the one place to customise asset keys and groups."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import AssetKey

if TYPE_CHECKING:
    from waterline.spec import FeedSpec

HELD = "held"


class WaterlineTranslator:
    """Maps a feed's tables to Dagster asset keys, groups and descriptions.

    Subclass and pass an instance to ``definitions_from_specs(..., translator=)``
    (the pattern of dagster-dbt's ``DagsterDbtTranslator``). ``table`` is
    ``"held"`` or a tier name. Job, sensor and check names keep the feed name
    (``<feed>_release``, ``<feed>_release_sensor``) whatever the keys are.
    """

    def get_asset_key(self, spec: "FeedSpec", table: str) -> AssetKey:
        return AssetKey([spec.feed, table])

    def get_group_name(self, spec: "FeedSpec") -> str | None:
        return spec.feed

    def get_description(self, spec: "FeedSpec", table: str) -> str:
        if table == HELD:
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

    def get_tags(self, spec: "FeedSpec", table: str) -> dict[str, str]:
        return {"waterline/feed": spec.feed, "waterline/table": table}
