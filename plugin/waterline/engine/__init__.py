"""The engine, in rooms by what it does (docs/architecture.md walks through each).

* `operations`: the entry points `waterline.Feed` calls (ingest, stream, release, gc, ...);
* `ingest`: versions into held, from a partition's output or a stream's micro-batch
  (`ingest.stream`);
* `release`: plan -> write -> commit of due versions into the tiers;
* `upkeep`: gc, maintain, leftovers;
* `proof`: audit, commit records, kept proofs;
* `tables`: one feed's tables (`FeedTables`), the lease, status, the applied spec;
* `spark`: the toolbox (session, functions, local frames, errors);
* `delta`: generic Delta (typed actions, the commit writer, objects, Parquet footers);
* `core`: pure values.

Dependencies point down that list (import-linter's ``engine-rooms`` contract in
``pyproject.toml``); modules that need no JVM never import pyspark (``no-jvm-modules``).
"""
