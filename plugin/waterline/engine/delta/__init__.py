"""The Delta room: generic Delta tables and the objects under them, read and written without a JVM.

`storage` (where a table lives: local folders, S3), `objects` (whole objects: create-if-absent,
list, ranged reads, deletes), `actions` (typed log actions), `table_log.TableLog` (one generic
reader over a table's log; the feed's reading of it is `engine.tables.feed_tables`), `commit` (the
one writer of waterline's own commits), `new_table`, `file_stats` and `restated_stats` (statistics
every reader can trust), `parquet_files`, `arrow_files`, `stages` (files no commit names yet),
`event_table`, `gate` and `rebase`. Nothing here knows a feed's tiers, leases or Spark.
"""
