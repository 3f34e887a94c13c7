"""`WaterlineHook`: the Airflow hook that hands tasks a `waterline.Feed`.

Shaped like a provider's hook: settings live on an Airflow connection (type
``waterline``, default id ``waterline_default``), the work on the object the
hook returns. The connection says where the feeds' Spark runs, in its extras:

    airflow connections add waterline_default --conn-type waterline \\
        --conn-extra '{"master": "spark://10.0.0.5:7077", "conf": {"spark.executor.memory": "4g"}}'
    # or {"remote": "sc://10.0.0.5:15002"} for Spark Connect

Precedence, most specific last, as everywhere in waterline: ``local[2]``, the
spec's ``spark:`` key, the connection (its ``master``/``remote`` replace the
spec's, its ``conf`` is added over the spec's), then ``WATERLINE_SPARK_MASTER``
/ ``WATERLINE_SPARK_REMOTE`` in the worker's environment. Without the
connection (the default id not defined) the spec and the environment decide,
as before the hook existed; a connection id named explicitly must exist.

Creating the hook, reading the connection and `get_feed` start no Spark: the
`Feed` starts it on the first method that needs it. Importing this module
imports no pyspark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from waterline.errors import WaterlineError
from waterline.feed import Feed, SessionConfig, SparkSettings, check_master, check_remote
from waterline.spec import FeedSpec, load_spec

APP_NAME = "waterline-airflow"
#: The connection's extras the hook reads.
EXTRA_KEYS = ("master", "remote", "conf")


class WaterlineHook(BaseHook):
    """Feeds for Airflow tasks, with their Spark settings from an Airflow connection.

    :param waterline_conn_id: the ``waterline`` connection; None: none (the spec's
        ``spark:`` key and the environment decide).
    :param spark: a running `SparkSession` or a master/``sc://`` URL for every feed of
        this hook, overriding all of the above (tests, notebooks).
    """

    conn_name_attr = "waterline_conn_id"
    default_conn_name = "waterline_default"
    conn_type = "waterline"
    hook_name = "Waterline"

    def __init__(self, waterline_conn_id: str | None = default_conn_name, *, spark: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.waterline_conn_id = waterline_conn_id
        self.spark = spark
        self._settings: dict[str, Any] | None = None

    # -- the connection ----------------------------------------------------------------

    def get_conn(self) -> dict[str, Any]:
        """The connection's Spark settings: ``master``, ``remote`` and ``conf`` (those it
        sets); empty without a connection. Read once per hook."""
        if self._settings is None:
            self._settings = self._read_connection()
        return self._settings

    def _read_connection(self) -> dict[str, Any]:
        conn_id = self.waterline_conn_id
        if conn_id is None:
            return {}
        try:
            conn = self.get_connection(conn_id)
        except AirflowNotFoundException:
            if conn_id == self.default_conn_name:
                return {}  # optional: the spec's `spark:` key and the environment decide
            raise
        return connection_settings(conn.extra_dejson, where=f"connection {conn_id}")

    def session_config(self, spec: FeedSpec) -> SessionConfig:
        """Where ``spec``'s Spark runs: the spec, then the connection, then the environment."""
        settings = self.get_conn()
        connection = SparkSettings(master=settings.get("master"), remote=settings.get("remote"),
                                   conf=settings.get("conf", {}))
        return SessionConfig.resolve(spec.spark, connection, app_name=APP_NAME)

    # -- feeds -------------------------------------------------------------------------

    def get_feed(self, spec: FeedSpec | str | Path, *, base_dir: str | Path | None = None) -> Feed:
        """The `Feed` of ``spec`` (a `FeedSpec`, or the path of its YAML, whose relative paths
        resolve against ``base_dir``, default the working directory). No Spark starts here."""
        if not isinstance(spec, FeedSpec):
            spec = load_spec(spec, base_dir=base_dir)
        return Feed(spec, spark=self.spark if self.spark is not None else self.session_config(spec))

    def test_connection(self) -> tuple[bool, str]:
        """Airflow's connection test: the settings parse (no Spark is started)."""
        try:
            settings = self.get_conn()
        except (WaterlineError, AirflowNotFoundException) as exc:
            return False, str(exc)
        where = settings.get("remote") or settings.get("master") or "the spec's spark: key"
        return True, f"waterline: Spark at {where}"

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The connection form: only the extras are used."""
        return {
            "hidden_fields": ["host", "schema", "login", "password", "port"],
            "relabeling": {},
            "placeholders": {"extra": json.dumps({"master": "spark://host:7077", "conf": {}})},
        }


def connection_settings(extra: Any, *, where: str) -> dict[str, Any]:
    """A ``waterline`` connection's extras, checked: ``master`` (a classic master URL) or
    ``remote`` (``sc://host:port``), and ``conf`` (a mapping, or its JSON text). Empty
    values count as unset (the connection form stores empty fields)."""
    if not isinstance(extra, dict):
        raise WaterlineError(f"{where}: extra: expected a JSON object, got {type(extra).__name__}")
    # Airflow's connection form may store its fields as ``extra__<conn type>__<field>``.
    extra = {k.removeprefix(f"extra__{WaterlineHook.conn_type}__"): v for k, v in extra.items()}
    unknown = sorted(set(extra) - set(EXTRA_KEYS))
    if unknown:
        raise WaterlineError(f"{where}: extra: unknown keys {unknown} (known: {', '.join(EXTRA_KEYS)})")
    master, remote, conf = extra.get("master") or None, extra.get("remote") or None, extra.get("conf") or {}
    if master and remote:
        raise WaterlineError(f"{where}: extra: set only one of master and remote")
    if isinstance(conf, str):
        try:
            conf = json.loads(conf)
        except ValueError:
            raise WaterlineError(f"{where}: extra.conf: not valid JSON: {conf!r}") from None
    if not isinstance(conf, dict):
        raise WaterlineError(f"{where}: extra.conf: expected a mapping of Spark conf keys, got {conf!r}")
    settings: dict[str, Any] = {"conf": {str(k): str(v) for k, v in conf.items()}}
    if master:
        settings["master"] = check_master(master, f"{where}: extra.master")
    if remote:
        settings["remote"] = check_remote(remote, f"{where}: extra.remote")
    return settings


__all__ = ["WaterlineHook", "connection_settings"]
