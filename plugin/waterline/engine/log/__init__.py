"""The engine's log room: a feed's state read from its Delta logs, the feed lease, staged commits. No JVM.

`status.read_feed_status` (what the sensor, `waterline status` and the Airflow
trigger read), `lease` (the feed lease object), `staged` (a pre-staged release
committed at its instant), `timeliness` (when rows became readable),
`spark_config` (where Spark runs, as plain data). It builds on the Delta room
(`waterline.engine.delta`) and never imports pyspark: the release sensor and
the Airflow trigger live on it.
"""
