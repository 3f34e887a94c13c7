"""``waterline.dagster.ReleaseFeed``: a Dagster Component whose attributes are a feed spec.

    # defs/ticks/defs.yaml
    type: waterline.dagster.ReleaseFeed
    attributes:
      feed: ticks
      warehouse: .waterline/warehouse
      source: {format: json, path: .waterline/data/ticks/{partition}/}
      partitions: {daily: {start: 2026-01-05}}
      key: [symbol, seq]
      event_time: event_time
      tiers:
        realtime: "TRUE"
        delayed_15m: "event_time + INTERVAL 15 MINUTES <= WATERLINE()"

The attributes are exactly the spec YAML's keys (validated by
`waterline.spec.spec_from_dict`, with its one-line errors); relative paths
resolve against the project root. ``build_defs`` returns what
``definitions_from_specs([spec])`` returns. ``dg scaffold defs
waterline.dagster.ReleaseFeed <path> [--spec FILE] [--feed NAME]`` writes a
``defs.yaml`` from an existing spec file, or a starter spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from dagster import Component, ComponentLoadContext, Definitions, Model, Resolvable
from dagster.components.component_scaffolding import scaffold_component
from dagster.components.scaffold.scaffold import Scaffolder, ScaffoldRequest, scaffold_with
from pydantic import BaseModel


class ReleaseFeedScaffoldParams(BaseModel):
    spec: str | None = None  # copy the attributes from this feed spec YAML
    feed: str | None = None  # the feed name (default: the spec's, or the folder's name)


class ReleaseFeedScaffolder(Scaffolder[ReleaseFeedScaffoldParams]):
    @classmethod
    def get_scaffold_params(cls) -> type[ReleaseFeedScaffoldParams]:
        return ReleaseFeedScaffoldParams

    def scaffold(self, request: ScaffoldRequest[ReleaseFeedScaffoldParams]) -> None:
        params = request.params or ReleaseFeedScaffoldParams()
        if params.spec:
            with open(params.spec) as fh:
                attributes = yaml.safe_load(fh)
        else:
            attributes = starter_attributes(params.feed or _name(request.target_path))
        if params.feed:
            attributes["feed"] = params.feed
        scaffold_component(request, attributes)


def starter_attributes(feed: str) -> dict[str, Any]:
    return {
        "feed": feed,
        "warehouse": ".waterline/warehouse",
        "source": {"format": "json", "path": f".waterline/data/{feed}/{{partition}}/"},
        "partitions": {"daily": {"start": "2026-01-01"}},
        "transform": "SELECT *, CAST(ts AS TIMESTAMP) AS event_time FROM source",
        "key": ["id"],
        "event_time": "event_time",
        "waterline": {"mode": "clock"},
        "tiers": {
            "realtime": "TRUE",
            "delayed_15m": "event_time + INTERVAL 15 MINUTES <= WATERLINE()",
        },
        "release_interval_seconds": 30,
    }


def _name(path: Path) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in Path(path).name).strip("_")
    return name or "feed"


@scaffold_with(ReleaseFeedScaffolder)
class ReleaseFeed(Component, Model, Resolvable):
    """A waterline feed: held and tier assets, the release job and sensor, and asset checks.

    The attributes are a waterline feed spec (the keys of the spec YAML).
    """

    feed: str
    description: str | None = None
    warehouse: str
    source: dict[str, Any] | None = None
    sources: dict[str, dict[str, Any]] | None = None
    partitions: dict[str, Any]
    transform: str | None = None
    job: str | None = None
    key: list[str] | str
    event_time: str
    timezone: str | None = None
    waterline: dict[str, Any] | None = None
    tiers: dict[str, str]
    late: str | None = None
    release_interval_seconds: int | None = None
    release_lead_seconds: int | None = None
    freshness_lag_seconds: int | None = None

    def spec_dict(self) -> dict[str, Any]:
        """The attributes as a spec mapping (unset optional keys left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def feed_spec(self, base_dir: str | Path | None = None, spec_file: str | None = None):
        from waterline.spec import spec_from_dict

        return spec_from_dict(self.spec_dict(), base_dir=base_dir, spec_file=spec_file)

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from waterline.dagster.definitions import definitions_from_specs

        origin = None
        for name in ("defs.yaml", "defs.yml"):
            if (context.path / name).exists():
                origin = str(context.path / name)
        spec = self.feed_spec(base_dir=context.project_root, spec_file=origin)
        return definitions_from_specs([spec])
