"""Where a classic Spark start's jars come from (waterline.engine.spark.jars): a folder
(WATERLINE_JARS or `make setup`'s), the cluster's own, or Spark's Ivy resolution of the same
closure `make setup` resolves with Maven. No Spark starts here: the wheel's starts are
tests/packaging/test_wheel.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest

from waterline.engine.spark import jars as spark_jars
from waterline.errors import WaterlineError

REPO = Path(__file__).resolve().parents[2]


def _pom_properties(name: str) -> dict[str, str]:
    root = ET.parse(REPO / "build" / name).getroot()
    props = root.find("{http://maven.apache.org/POM/4.0.0}properties")
    return {child.tag.split("}")[1]: child.text for child in props}


def test_the_ivy_coordinates_are_the_versions_make_setup_resolves():
    versions = {**_pom_properties("delta-jars.pom.xml"), **_pom_properties("s3-jars.pom.xml"),
                **_pom_properties("kafka-jars.pom.xml")}
    packages = {p.rsplit(":", 1)[0]: p.rsplit(":", 1)[1] for p in spark_jars.PACKAGES}
    assert packages["io.delta:delta-spark_4.2_2.13"] == versions["delta.version"]
    assert packages["org.apache.spark:spark-sql-kafka-0-10_2.13"] == versions["spark.version"] == pyspark.__version__
    assert packages["org.apache.spark:spark-avro_2.13"] == versions["spark.version"]
    assert packages["org.apache.hadoop:hadoop-aws"] == versions["hadoop.version"]
    sdk = [v for k, v in packages.items() if k.startswith("software.amazon.awssdk:")]
    assert sdk and set(sdk) == {versions["awssdk.version"]}


def test_every_artifact_left_to_spark_is_one_pyspark_ships():
    versioned = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")
    shipped = {versioned.match(j.name).group("name") for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    missing = [c for c in spark_jars.SPARK_SHIPS if c.split(":")[1] not in shipped]
    assert not missing, f"pyspark ships none of {missing}: Ivy must resolve them"


def test_a_checkout_starts_with_make_setups_folder_and_no_network(monkeypatch):
    monkeypatch.delenv("WATERLINE_JARS", raising=False)
    conf = spark_jars.jar_conf()
    assert set(conf) == {"spark.jars"}
    jars = conf["spark.jars"].split(",")
    assert all(Path(j).parent == spark_jars.setup_jars_dir() for j in jars)
    assert any(Path(j).name == "waterline-spark.jar" for j in jars)


def test_an_offline_folder_and_a_cluster_that_has_the_jars(monkeypatch, tmp_path):
    monkeypatch.setenv("WATERLINE_JARS", str(tmp_path))
    with pytest.raises(WaterlineError, match=r"WATERLINE_JARS=.*: no delta-spark_\*\.jar in that folder"):
        spark_jars.jar_conf()
    (tmp_path / "delta-spark_4.2_2.13-4.4.0.jar").write_bytes(b"")
    assert spark_jars.jar_conf() == {"spark.jars": str(tmp_path / "delta-spark_4.2_2.13-4.4.0.jar")}
    monkeypatch.setenv("WATERLINE_JARS", "provided")
    assert spark_jars.jar_conf() == {}
