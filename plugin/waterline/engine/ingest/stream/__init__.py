"""The ingest room's stream part: Kafka sources through Spark Structured Streaming into held, exactly once.

`stream` (the long-running run and its warm-up), `source` (a Kafka source as Spark reads it),
`batch` (one micro-batch into held; its steps share one `batch_context.BatchContext`),
`batch_write` (its versions planned and written by Spark), `small_batch` and `small_versions`
(a small batch: one Spark job, the rest on the driver), `held_keys` (held's lookup columns kept
in memory) and `offsets` (a batch's size from Spark's checkpoint). A batch reuses the rest of the
ingest room: validation, versions, held appends.
"""
