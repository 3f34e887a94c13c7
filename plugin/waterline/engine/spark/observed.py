"""Observed metrics: counts a Spark action computes while it writes, read after it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Observation


def metrics(observation: Observation) -> dict[str, Any]:
    """The metrics the first action on the observed frame computed; empty when Spark reported
    none (classic Spark raises for a plan that read no file, Spark Connect can return an
    empty dict), and the caller counts apart then."""
    try:
        return observation.get
    except Exception:
        return {}


__all__ = ["metrics"]
