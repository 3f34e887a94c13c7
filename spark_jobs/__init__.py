"""The demo feeds' Spark processing steps.

Each module exposes ``process(spark, df, partition) -> DataFrame``, named by a
feed spec's ``job: spark_jobs.<module>:process``, and runs standalone:

    python -m spark_jobs.ticks .waterline/data/ticks/2026-01-05/
    python -m spark_jobs.indicators .waterline/data/indicators/2026-01-05/
"""
