"""The engine's Delta room: Delta tables and the objects under them, read and written without a JVM.

`storage` (where a table lives: local folders, S3, the clients), `objects`
(whole objects: idempotent create-if-absent, list, ranged reads, deletes),
`table_log.TableLog` (one reader over a table's log), `commit` (the one writer
of waterline's own Delta commits), `parquet_files` (staged Parquet files as add
actions, statistics from footers), `stages` (the folders of files no commit
names yet) and `staged_keys` (duplicate keys among staged files). Nothing here
knows feeds, leases or Spark: the log room above builds on it.
"""
