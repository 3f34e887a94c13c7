"""The engine's log room: Delta logs and the feed lease, read and written without a JVM.

`table_log.TableLog` (states, transactions, files of one Delta table),
`status.read_feed_status`, `storage` (local folders and S3 for both readers),
`lease` (the feed lease object), `timeliness` (when rows became readable).
The release sensor and the Airflow trigger live on this room alone: it never
imports pyspark.
"""
