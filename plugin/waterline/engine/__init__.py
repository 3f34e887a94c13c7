"""The engine, in three rooms by what they need to run.

* `core`: pure (columns, typed states, results, due moments, statistics arithmetic);
* `log`: Delta logs and the lease, without a JVM (``deltalake``, boto3);
* `spark`: everything that needs a Spark session.

Dependencies point down: ``spark`` -> ``log`` -> ``core``; neither ``core`` nor
``log`` imports pyspark (an import-linter contract in ``pyproject.toml``).
"""
