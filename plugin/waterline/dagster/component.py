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

The attributes are exactly the spec YAML's keys (generated from
`waterline.spec.schema.SPEC_KEYS`, validated by
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
from pydantic import BaseModel, Field, create_model

from waterline.dagster.definitions import definitions_from_specs
from waterline.dagster.translator import WaterlineTranslator
from waterline.spec import FeedSpec, spec_from_dict
from waterline.spec.schema import SPEC_KEYS, SpecKey


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


class _ReleaseFeedBase(Component, Model, Resolvable):
    """The behaviour of `ReleaseFeed`; its fields come from `waterline.spec.schema.SPEC_KEYS`."""

    def spec_dict(self) -> dict[str, Any]:
        """The attributes as a spec mapping (unset optional keys left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def feed_spec(self, base_dir: str | Path | None = None, spec_file: str | None = None) -> FeedSpec:
        return spec_from_dict(self.spec_dict(), base_dir=base_dir, spec_file=spec_file)

    def get_translator(self) -> WaterlineTranslator:
        """How the feed's tables map to Dagster asset specs; override in a subclass of the
        Component to customise keys, groups or metadata (as `definitions_from_specs(translator=)`)."""
        return WaterlineTranslator()

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        origin = None
        for name in ("defs.yaml", "defs.yml"):
            if (context.path / name).exists():
                origin = str(context.path / name)
        spec = self.feed_spec(base_dir=context.project_root, spec_file=origin)
        return definitions_from_specs([spec], translator=self.get_translator())


def _field(key: SpecKey) -> tuple[Any, Any]:
    return key.type, Field(... if key.required else None, description=key.description)


# Generated rather than written out: a key added to the spec is an attribute of the Component
# at once, with the same required-ness and description.
ReleaseFeed = scaffold_with(ReleaseFeedScaffolder)(create_model(
    "ReleaseFeed",
    __base__=_ReleaseFeedBase,
    __module__=__name__,
    __doc__="""A waterline feed: held and tier assets, the release job and sensor, and asset checks.

    The attributes are a waterline feed spec (the keys of the spec YAML, `waterline.spec.schema`).
    """,
    **{name: _field(key) for name, key in SPEC_KEYS.items()},
))
