"""Observed metrics: counts a Spark action computes while it writes, read after it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Observation


def metrics(observation: Observation) -> dict[str, Any]:
    """The metrics the first action on the observed frame computed; empty when Spark reported
    none (classic Spark raises for a plan that read no file, Spark Connect can return an
    empty dict), and the caller counts apart then."""
    try:
        return observation.get
    except Exception:
        return {}


def counted(observation: Observation, frame: DataFrame, aggregates: list[Column]) -> dict[str, Any]:
    """``aggregates`` over ``frame``: as ``observation`` (observing them on ``frame``) saw them
    during the action that ran it, else by a job of their own."""
    return metrics(observation) or frame.agg(*aggregates).collect()[0].asDict()


__all__ = ["counted", "metrics"]
