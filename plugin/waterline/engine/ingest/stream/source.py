"""A Kafka source as Spark reads it: the stream, each micro-batch's view ``source``, its output.

The view has Spark's Kafka columns (key and value as bytes, topic, partition, offset,
timestamp, timestampType); a source with ``value: {format, schema}`` has ``value`` decoded
to a struct of that schema (NULL for a tombstone) and its unparseable records set aside for
the quarantine. The transform runs over the view with each row's record columns and its
removal mark appended (`waterline.spec.stream_sql.record_select`).

Credentials never sit in a spec: every ``WATERLINE_KAFKA_<NAME>`` environment variable
becomes the Kafka client option ``kafka.<name>`` (lower case, ``_`` -> ``.``), e.g.
``WATERLINE_KAFKA_SASL_JAAS_CONFIG`` -> ``kafka.sasl.jaas.config``.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from waterline.engine.spark import observed
from waterline.engine.spark.functions import register_functions
from waterline.engine.ingest.source import CORRUPT
from waterline.engine.spark.errors import hint
from waterline.errors import WaterlineError
from waterline.spec import FeedSpec, SourceSpec
from waterline.spec.stream_sql import record_select

_ENV_PREFIX = "WATERLINE_KAFKA_"
#: Unparsed records of a batch: (reason, raw text), as the quarantine keeps them.
UNPARSED_REASON = "_wl_reason"
UNPARSED_ROW = "_wl_row"
#: An Avro record's value as it came (bytes), for the quarantine, while ``value`` is decoded.
_RAW = "_wl_raw_value"


def credential_options(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Kafka client options from ``WATERLINE_KAFKA_*`` variables (secrets stay out of specs)."""
    env = os.environ if environ is None else environ
    return {"kafka." + name[len(_ENV_PREFIX):].lower().replace("_", "."): value
            for name, value in env.items() if name.startswith(_ENV_PREFIX) and len(name) > len(_ENV_PREFIX)}


#: Kafka consumer options waterline gives Spark's Kafka source unless the spec's ``options``
#: set them. Kafka's defaults (1 MiB per partition and fetch, 500 records per poll) made a
#: drain of 1M records ask the broker ~15 times per partition: 2.5-3.1 s to read them on two
#: cores, 1.1-2.3 s with 16 MiB fetches. Polls stay at 10,000 records: Spark pools each
#: partition's consumer with its last poll's records for minutes after a query ends, and at
#: 100,000 a process that read 1M records some twenty times ran out of its 2 GiB heap
#: (docs/decisions.md "Kafka reads"). A fetch returns what the partition has, so a small
#: micro-batch is not held back by them.
CONSUMER_DEFAULTS = {"kafka.max.partition.fetch.bytes": str(16 << 20), "kafka.max.poll.records": "10000"}


def reader_options(source: SourceSpec) -> dict[str, str]:
    """The options of Spark's Kafka source for ``source``."""
    kafka = source.kafka
    assert kafka is not None
    return {
        # Records Kafka no longer has are an error naming them, never skipped (`missing_offsets`).
        "failOnDataLoss": "true",
        **CONSUMER_DEFAULTS,
        **source.options,
        **credential_options(),
        "kafka.bootstrap.servers": kafka.bootstrap,
        "subscribe": ",".join(kafka.topics),
        "startingOffsets": kafka.starting_offsets,
    }


def read_stream(spark: SparkSession, spec: FeedSpec, name: str) -> DataFrame:
    """The streaming DataFrame of source ``name`` (Spark's Kafka columns)."""
    return spark.readStream.format("kafka").options(**reader_options(spec.sources[name])).load()


def read_once(spark: SparkSession, spec: FeedSpec, name: str, *, starting: str | None = None,
              ending: str = "latest") -> DataFrame:
    """What source ``name`` holds now, as a batch (the same columns as `read_stream`), from
    the spec's ``starting_offsets`` or ``starting`` (a batch read cannot start at "latest")."""
    reader = spark.read.format("kafka").options(**reader_options(spec.sources[name]))
    if starting is not None:
        reader = reader.option("startingOffsets", starting)
    return reader.option("endingOffsets", ending).load()


_UNPARSED_COUNT = "unparsed"


@dataclass(frozen=True)
class Decoded:
    """A micro-batch with ``value`` decoded: kept (persisted) once for both of its readers, or
    counted by the one pass that reads the view (``observation``)."""

    view: DataFrame  # the view ``source``: the records that decoded (a tombstone's value stays NULL)
    unparsed: DataFrame | None  # the records that did not, as quarantine rows (None: no value format)
    kept: DataFrame | None  # what is persisted; `release` frees it
    observation: Observation | None = None  # unkept: counts the unparsed records as the view is read

    def unparsed_count(self) -> int:
        """How many records did not decode: observed by the pass that read the view, if it
        reported (else, and when kept, counted by a job of its own)."""
        if self.unparsed is None:
            return 0
        found = {} if self.observation is None else observed.metrics(self.observation)
        return found[_UNPARSED_COUNT] if _UNPARSED_COUNT in found else self.unparsed.count()

    def release(self) -> None:
        if self.kept is not None:
            self.kept.unpersist()


def decoded(records: DataFrame, source: SourceSpec, *, keep: bool = True) -> Decoded:
    """The records with ``value`` decoded and the unparseable ones set aside.

    Spark's optimizer inlines the parse into every expression that reads a field of it (a
    filter, each field, the corrupt-record check): two readers of an unkept frame parsed
    each value about six times and read Kafka twice. ``keep``: the decoded records are
    persisted, read and parsed once for both readers. Else (a batch too large to collect,
    whose view is read by one pass) an observation sits between the parse and the filters
    and counts the unparsed records: the optimizer does not move a filter through it, so
    the parse is one projection, and nothing is kept (building the cache of 1M records
    cost more than parsing them: docs/decisions.md). The unparsed records are read again
    only if there are some."""
    kafka = source.kafka
    assert kafka is not None
    if kafka.value_format is None:
        return Decoded(records, None, None)
    decode = {}
    if kafka.value_format == "avro":
        parse, text = _avro_value(kafka.value_schema, kafka.value_wire), F.base64(F.col(_RAW))
        decode[_RAW] = F.col("value")  # the raw bytes, for the quarantine (the parse reads them too)
        bad = F.col(_RAW).isNotNull() & _not_a_datum(kafka.value_schema)
    else:
        schema = f"{kafka.value_schema}, `{CORRUPT}` STRING"
        options = {"columnNameOfCorruptRecord": CORRUPT, "mode": "PERMISSIVE"}
        raw = F.col("value").cast("string")
        parse = F.from_json(raw, schema, options) if kafka.value_format == "json" else F.from_csv(raw, schema, options)
        bad = F.col("value").isNotNull() & F.col(f"value.{CORRUPT}").isNotNull()
        # read from the kept rows, whose ``value`` is the parsed struct: the record's text is
        # what Spark kept of it in the corrupt-record field
        text = F.col(f"value.{CORRUPT}")
    decode["value"] = F.when(F.col("value").isNull(), F.lit(None)).otherwise(parse)
    # ``bad`` is never NULL, so the two filters split the records; it is not kept as a column
    # of its own (each DataFrame step is an analysis of the plan, ~10 ms a batch)
    parsed = records.withColumns(decode)
    kept = observation = None
    if keep:
        kept = seen = parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    else:
        observation = Observation(f"waterline_decoded_{uuid.uuid4().hex}")
        seen = parsed.observe(observation, F.count(F.when(bad, 1)).alias(_UNPARSED_COUNT))
    unparsed = parsed.filter(bad).select(
        F.concat(F.lit(f"could not be parsed as {kafka.value_format} (topic "), F.col("topic"), F.lit(", partition "),
                 F.col("partition").cast("string"), F.lit(", offset "), F.col("offset").cast("string"),
                 F.lit(")")).alias(UNPARSED_REASON),
        text.alias(UNPARSED_ROW))
    view = seen.filter(~bad)
    if kafka.value_format == "avro":
        return Decoded(view.drop(_RAW), unparsed, kept, observation)
    return Decoded(view.withColumn("value", F.col("value").dropFields(CORRUPT)), unparsed, kept, observation)


def _avro_value(schema: str, wire: str) -> Column:
    """The value decoded by Spark's ``from_avro`` (NULL when it is not a datum of ``schema``:
    permissive, so one bad record is quarantined rather than failing the batch). Confluent's
    framing is a zero magic byte and a 4-byte schema id before the datum: a value without
    that byte is not one of the topic's records (the quarantine keeps it), and the schema id
    is not looked up (the spec's schema is the reader's; no registry is reached)."""
    if wire == "plain":
        return from_avro(F.col("value"), schema, {"mode": "PERMISSIVE"})
    framed = F.expr("length(value) > 5 AND substring(value, 1, 1) = X'00'")
    return F.when(framed, from_avro(F.expr("substring(value, 6)"), schema, {"mode": "PERMISSIVE"}))


def _not_a_datum(schema: str) -> Column:
    """Whether a decoded Avro value is Spark's answer to bytes that are no datum: permissive
    ``from_avro`` gives a struct of NULLs then, which a real datum cannot be when the schema
    has a field that is not nullable (the first such field is checked). A schema whose
    fields are all nullable cannot tell the two apart (docs/streams.md)."""
    fields = json.loads(schema)["fields"]
    required = [f["name"] for f in fields
                if not (f["type"] == "null" or (isinstance(f["type"], list) and "null" in f["type"]))]
    missing = F.col("value").isNull()
    return missing | F.col("value")[required[0]].isNull() if required else missing


@dataclass(frozen=True)
class BatchFrames:
    """One micro-batch through the transform; `close` once its rows are written."""

    output: DataFrame  # the output rows, each with its record columns and removal mark
    view: str  # the batch's view of the records (the transform's ``source``)
    decoded: Decoded

    @property
    def unparsed(self) -> DataFrame | None:
        """The records that did not decode, as quarantine rows."""
        return self.decoded.unparsed

    def close(self) -> None:
        drop_view(self.output.sparkSession, self.view)
        self.decoded.release()


def batch_output(spec: FeedSpec, name: str, records: DataFrame, *, keep: bool = True) -> BatchFrames:
    """One micro-batch of source ``name`` through the transform (``keep``: see `decoded`)."""
    decoded_batch = decoded(records, spec.sources[name], keep=keep)
    # The view lives in the batch's own session (a foreachBatch frame comes with a clone of
    # the query's session, whose temporary views the caller's cannot see) under a name of
    # this batch alone: over Spark Connect that session is shared by every query of the
    # client, and the lazily resolved plan of a view named ``source`` read another run's batch.
    session = records.sparkSession
    unique = f"_wl_{name}_{uuid.uuid4().hex[:12]}"
    decoded_batch.view.createOrReplaceTempView(unique)
    if spec.transform:
        register_functions(session, spec.transform)
    try:
        sql = record_select(spec.transform, spec.remove_when, views={"source": unique, name: unique})
        return BatchFrames(session.sql(sql), unique, decoded_batch)
    except Exception as exc:  # Spark's analysis errors span many lines; keep the first
        drop_view(session, unique)
        decoded_batch.release()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WaterlineError(f"feed {spec.feed}: source {name}: transform: {first}{hint(exc)}") from exc


def drop_view(session: SparkSession, view: str) -> None:
    """Drop a batch's view (its frames are written; the view would keep the batch's plan)."""
    session.catalog.dropTempView(view)
