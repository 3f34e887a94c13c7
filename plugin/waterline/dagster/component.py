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

Instead of the spec's keys, ``specs`` names spec files (relative to the defs.yaml
folder). Besides the spec, four attributes say how the feed meets Dagster, as the
dagster-dbt and dagster-sling components do:

    attributes:
      specs: [ticks.yaml]            # or the spec's keys, as above
      base_dir: .                    # the specs' relative paths (default: the project root)
      translation:                   # every table's AssetSpec; {{ feed }} and {{ table }} in scope
        key_prefix: market
        group_name: "{{ feed }}_tiers"
        tags: {team: data}
      resource: {spark_remote: "sc://spark-connect:15002"}   # the `waterline` resource
      sensor: {minimum_interval_seconds: 10, default_status: running}
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from dagster import (
    AssetDep, AssetKey, AssetSpec, Component, ComponentLoadContext, DefaultSensorStatus, Definitions, Model, Resolvable,
)
from dagster.components.component_scaffolding import scaffold_component
from dagster.components.scaffold.scaffold import Scaffolder, ScaffoldRequest, scaffold_with
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver
from pydantic import BaseModel, Field, create_model

from waterline.dagster.definitions import definitions_from_specs
from waterline.dagster.resources import WaterlineResource, shared_resource
from waterline.dagster.translator import AUDIT_REPORT, HELD, WaterlineTranslator
from waterline.errors import WaterlineError
from waterline.feed import SessionConfig, SparkSettings
from waterline.spec import FeedSpec, SpecError, load_specs, spec_from_dict
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


@dataclass(frozen=True)
class FeedTable:
    """What ``translation`` is given for each asset: the feed's spec and the table (``"held"``,
    a tier or ``"audit_report"``); in the YAML, ``{{ feed }}``, ``{{ table }}`` and ``{{ feed_spec }}``."""

    spec: FeedSpec
    table: str


def _template_vars(data: FeedTable) -> dict[str, Any]:
    return {"feed": data.spec.feed, "table": data.table, "feed_spec": data.spec}


class ResourceSettings(Model, Resolvable):
    """The ``waterline`` resource (`WaterlineResource`): where runs start Spark, how they retry.
    Unset fields keep the default: the specs' ``spark:`` key, then WATERLINE_SPARK_MASTER/_REMOTE."""

    spark_master: str | None = Field(default=None, description="A master: local[N], spark://host:port, k8s://...")
    spark_remote: str | None = Field(default=None, description="A Spark Connect URL sc://host:port (no JVM in runs).")
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Spark conf added to waterline's.")
    transient_retries: int | None = Field(default=None, description="Retries after a busy or lost lease (default 3).")
    retry_wait_seconds: float | None = Field(default=None, description="Seconds between those retries (default 30).")


class SensorSettings(Model, Resolvable):
    """The release sensor ``<feed>_release_sensor`` (and the maintain/audit schedules' status)."""

    minimum_interval_seconds: int | None = Field(
        default=None, ge=1, description="Seconds between ticks (default: the spec's release_interval_seconds).")
    default_status: Literal["running", "stopped"] = Field(
        default="stopped", description="Whether the sensor and schedules run when the code location loads.")


class _TranslatedTranslator(WaterlineTranslator):
    """``inner``'s asset specs passed through the component's ``translation``; a tier's
    dependency on the held asset follows the held asset's translated key."""

    def __init__(self, inner: WaterlineTranslator, translation: TranslationFn[FeedTable]):
        self._inner, self._translation = inner, translation

    def _translated(self, spec: FeedSpec, table: str) -> AssetSpec:
        return self._translation(self._inner.get_asset_spec(spec, table), FeedTable(spec, table))

    def get_asset_key(self, spec: FeedSpec, table: str) -> AssetKey:
        return self._translated(spec, table).key

    def get_asset_spec(self, spec: FeedSpec, table: str) -> AssetSpec:
        renamed = {self._inner.get_asset_key(spec, t): self.get_asset_key(spec, t)
                   for t in (HELD, AUDIT_REPORT, *spec.tiers)}
        out = self._translated(spec, table)
        deps = [AssetDep(renamed[dep.asset_key], partition_mapping=dep.partition_mapping)
                if dep.asset_key in renamed else dep for dep in out.deps]
        return out.replace_attributes(deps=deps)


_DAGSTER_FIELDS = ("specs", "base_dir", "translation", "resource", "sensor")


class _ReleaseFeedBase(Component, Model, Resolvable):
    """The behaviour of `ReleaseFeed`; its spec fields come from `waterline.spec.schema.SPEC_KEYS`."""

    specs: str | list[str] | None = Field(
        default=None, description="Spec YAML file(s), relative to this defs.yaml's folder, instead of the spec's keys.")
    base_dir: str | None = Field(
        default=None, description="Where the specs' relative paths resolve, from the project root (default: it).")
    translation: Annotated[
        TranslationFn[FeedTable] | None,
        TranslationFnResolver[FeedTable](template_vars_for_translation_fn=_template_vars),
    ] = Field(default=None, description="Asset attributes for every table ({{ feed }}, {{ table }} in scope).")
    resource: ResourceSettings | None = Field(default=None, description="The `waterline` resource's settings.")
    sensor: SensorSettings | None = Field(default=None, description="The release sensor's settings.")

    def spec_dict(self) -> dict[str, Any]:
        """The spec's keys given inline, as a spec mapping (unset optional keys left out)."""
        data = self.model_dump(exclude=set(_DAGSTER_FIELDS))
        return {k: v for k, v in data.items() if v is not None}

    def feed_spec(self, base_dir: str | Path | None = None, spec_file: str | None = None) -> FeedSpec:
        return spec_from_dict(self.spec_dict(), base_dir=base_dir, spec_file=spec_file)

    def feed_specs(self, context: ComponentLoadContext) -> list[FeedSpec]:
        """The feed(s) of this component: the inline spec keys, or the ``specs`` files."""
        base = Path(context.project_root) / (self.base_dir or ".")
        origin = next((str(context.path / name) for name in ("defs.yaml", "defs.yml")
                       if (context.path / name).exists()), None)
        where = f"spec {origin or context.path}"
        inline = self.spec_dict()
        if self.specs is None:
            if not inline:
                raise SpecError(f"{where}: specs: give spec files (`specs:`) or the spec's keys (feed, tiers, ...)")
            return [self.feed_spec(base_dir=base, spec_file=origin)]
        if inline:
            raise SpecError(f"{where}: specs: give spec files or the spec's keys, not both (found {sorted(inline)})")
        paths = [self.specs] if isinstance(self.specs, str) else list(self.specs)
        return load_specs([Path(context.path) / p for p in paths], base_dir=base)

    def get_translator(self) -> WaterlineTranslator:
        """How the feed's tables map to Dagster asset specs; override in a subclass of the
        Component to customise keys, groups or metadata (as `definitions_from_specs(translator=)`).
        ``translation`` in the YAML applies on top of it."""
        return WaterlineTranslator()

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        specs = self.feed_specs(context)
        sensor = self.sensor or SensorSettings()
        if sensor.minimum_interval_seconds is not None:
            # the sensor's interval is the spec's release interval (not in its release part: no apply needed)
            specs = [replace(s, release_interval_seconds=sensor.minimum_interval_seconds) for s in specs]
        translator = self.get_translator()
        if self.translation is not None:
            translator = _TranslatedTranslator(translator, self.translation)
        return definitions_from_specs(
            specs, translator=translator, default_sensor_status=DefaultSensorStatus(sensor.default_status.upper()),
            resource=None if self.resource is None else component_resource(specs, self.resource),
        )


def component_resource(specs: list[FeedSpec], settings: ResourceSettings) -> WaterlineResource:
    """The resource of ``settings`` over the specs' ``spark:`` key; the environment still wins,
    as it does over a spec (`SessionConfig.resolve`)."""
    spark = {repr(s.spark.to_dict() if s.spark else None): s.spark for s in specs}
    layer = SparkSettings(master=settings.spark_master, remote=settings.spark_remote, conf=settings.spark_conf)
    if len(spark) > 1 and not (layer.master or layer.remote):
        raise WaterlineError("resource: feeds of one component must share one Spark: set spark_master or spark_remote")
    config = SessionConfig.resolve(next(iter(spark.values()), None), layer, app_name="waterline-dagster")
    options = {k: v for k, v in (("transient_retries", settings.transient_retries),
                                 ("retry_wait_seconds", settings.retry_wait_seconds)) if v is not None}
    return shared_resource(WaterlineResource.for_config(config, **options))


def _field(key: SpecKey) -> tuple[Any, Any]:
    # Required spec keys are optional here: `specs:` may name files instead; the spec loader
    # still refuses an inline spec missing one, with its one-line error.
    suffix = " Required unless `specs` names spec files." if key.required else ""
    return key.type | None, Field(None, description=key.description + suffix)


# Generated rather than written out: a key added to the spec is an attribute of the Component
# at once, with the same description.
ReleaseFeed = scaffold_with(ReleaseFeedScaffolder)(create_model(
    "ReleaseFeed",
    __base__=_ReleaseFeedBase,
    __module__=__name__,
    __doc__="""A waterline feed: held and tier assets, the release job and sensor, and asset checks.

    The attributes are a waterline feed spec (the keys of the spec YAML, `waterline.spec.schema`)
    or ``specs`` (spec files), and how the feed meets Dagster: ``translation``, ``resource``, ``sensor``.
    """,
    **{name: _field(key) for name, key in SPEC_KEYS.items()},
))
