"""Small feeds for the Dagster tests, built on tests/engine/feedkit.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.engine import feedkit
from tests.engine.feedkit import make_spec, write_partition

TIERS = {
    "rt": "TRUE",
    "emb": "embargo_until <= WATERLINE()",
}
PAST = "2026-01-05T10:00:00"
FAR = "2099-01-05T11:00:00"


def rows(partition: str, n: int = 2) -> list[dict]:
    """n rows: even ids embargoed until the past (due at once), odd ids until 2099."""
    base = {"a": 0, "b": 100, "c": 200}.get(partition, 300)
    return [
        {"id": base + i, "event_time": PAST, "status": "final",
         "embargo_until": PAST if i % 2 == 0 else FAR, "v": f"{partition}{i}"}
        for i in range(n)
    ]


def spec(root: Path, **overrides):
    overrides.setdefault("release_interval_seconds", 1)
    return make_spec(root, TIERS, **overrides)


def spec_dict(root: Path, **overrides) -> dict:
    overrides.setdefault("release_interval_seconds", 1)
    return feedkit.spec_dict(root, TIERS, **overrides)


def write_spec_yaml(root: Path, **overrides) -> Path:
    path = root / "feeds" / "f.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec_dict(root, **overrides), sort_keys=False))
    return path


__all__ = ["TIERS", "rows", "spec", "spec_dict", "write_partition", "write_spec_yaml"]
