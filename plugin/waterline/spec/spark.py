"""The spec's optional ``spark:`` key: where the feed's Spark runs.

    spark:
      master: spark://10.0.0.5:7077     # classic: local[N] (default local[2]), spark://, yarn, k8s://
      # remote: sc://10.0.0.5:15002     # or Spark Connect (no JVM in the waterline process)
      conf: {spark.executor.memory: 4g} # optional Spark conf (session confs only over Connect)

``WATERLINE_SPARK_MASTER`` / ``WATERLINE_SPARK_REMOTE`` override it (see
`waterline.engine.spark.session.SessionConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SPARK_KEYS = ("master", "remote", "conf")
MASTER_PREFIXES = ("local", "spark://", "yarn", "k8s://", "mesos://")


@dataclass(frozen=True)
class SparkSpec:
    master: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.master:
            out["master"] = self.master
        if self.remote:
            out["remote"] = self.remote
        if self.conf:
            out["conf"] = dict(self.conf)
        return out


def parse_spark(check, value: Any) -> SparkSpec:
    """Validate the ``spark:`` mapping with the loader's checker (one-line SpecErrors)."""
    value = check.mapping(value, "spark", "a mapping {master: ...} or {remote: sc://host:port}")
    check.only_keys(value, SPARK_KEYS, "spark")
    if "master" in value and "remote" in value:
        check.fail("spark", "give one of master (classic Spark) or remote (Spark Connect), not both")
    master = remote = None
    if "master" in value:
        master = check.text(value["master"], "spark.master").strip()
        if not master.startswith(MASTER_PREFIXES):
            check.fail("spark.master", f"expected local[N], spark://host:port, yarn or k8s://..., got {master!r}")
    if "remote" in value:
        remote = check.text(value["remote"], "spark.remote").strip()
        if not remote.startswith("sc://") or remote == "sc://":
            check.fail("spark.remote", f"expected a Spark Connect URL sc://host:port, got {remote!r}")
    conf_in = check.mapping(value.get("conf") or {}, "spark.conf")
    conf = {}
    for key, option in conf_in.items():
        if isinstance(option, bool):
            conf[key] = "true" if option else "false"
        elif isinstance(option, (str, int, float)):
            conf[key] = str(option)
        else:
            check.fail(f"spark.conf.{key}", f"expected a string, number or boolean, got {type(option).__name__}")
    return SparkSpec(master=master, remote=remote, conf=conf)
