"""`load_feed_specs`: what the Dagster definitions and the Airflow DAG factory load."""

from __future__ import annotations

import dataclasses

import pytest

from tests.engine.feedkit import spec_dict
from waterline.errors import WaterlineError
from waterline.spec import spec_from_dict
from waterline.spec.loader import load_feed_specs


def _spec(tmp_path, tiers, **overrides):
    return spec_from_dict(spec_dict(tmp_path, tiers, **overrides), base_dir=tmp_path)


def test_good_specs_load_and_a_feed_defined_twice_is_refused(tmp_path):
    spec = _spec(tmp_path, {"emb": "embargo_until <= WATERLINE()"})
    assert load_feed_specs(spec) == [spec]
    with pytest.raises(WaterlineError, match="feed f is defined twice"):
        load_feed_specs([spec, spec])


BAD_POLICIES = [
    ({"emb": "embargo_until = WATERLINE()"}, {}, ["tiers.emb", '"embargo_until = WATERLINE()"', "equality"]),
    ({"r": "rand() < 0.5 AND event_time <= WATERLINE()"}, {}, ["tiers.r", "RAND()", "non-deterministic"]),
    # the select list names the output's columns: a policy naming another is refused
    ({"emb": "embargo_until <= WATERLINE()"}, {"transform": "SELECT id, event_time, v FROM source"},
     ["tiers.emb", 'unknown column "embargo_until"']),
]


@pytest.mark.parametrize(("tiers", "overrides", "words"), BAD_POLICIES)
def test_a_bad_policy_is_refused_when_the_spec_loads_naming_spec_and_tier(tmp_path, tiers, overrides, words):
    with pytest.raises(WaterlineError) as info:
        _spec(tmp_path, tiers, **overrides)
    message = str(info.value)
    assert "\n" not in message and message.startswith("spec f: "), message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize(("tiers", "overrides", "words"), BAD_POLICIES)
def test_a_feed_spec_built_directly_is_checked_by_the_factories_loader(tmp_path, tiers, overrides, words):
    # a FeedSpec made in Python (not through the loader) still meets the same checks in
    # load_feed_specs, which the Dagster definitions and the Airflow DAG factory call
    spec = dataclasses.replace(_spec(tmp_path, {"rt": "TRUE"}, **overrides), tiers=tiers)
    with pytest.raises(WaterlineError) as info:
        load_feed_specs(spec)
    message = str(info.value)
    assert "\n" not in message and message.startswith("spec f: "), message
    for word in words:
        assert word in message, message


def test_a_feed_spec_built_directly_with_a_reserved_tier_name_is_refused(tmp_path):
    spec = dataclasses.replace(_spec(tmp_path, {"rt": "TRUE"}), tiers={"audit_report": "TRUE"})
    with pytest.raises(WaterlineError, match=r"^spec f: tiers.audit_report: 'audit_report' names the feed's "
                                             r"audit report asset in Dagster; rename the tier$"):
        load_feed_specs(spec)


def test_columns_are_not_checked_when_the_spec_does_not_name_them(tmp_path):
    # SELECT *: the columns are only known when Spark reads the source (`plan --partition` checks them)
    spec = _spec(tmp_path, {"x": "no_such_column <= WATERLINE()"}, transform="SELECT * FROM source")
    assert load_feed_specs(spec) == [spec]
