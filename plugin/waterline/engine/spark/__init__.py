"""The engine's Spark room: everything that needs a Spark session (and so pyspark).

Session start-up (local, cluster, Spark Connect), reading a partition's
output, ingest, release (and pre-armed release runs), GC and hold/resume (the
local standalone cluster a developer starts lives in `waterline.local`, outside
the engine). Nothing outside this room imports pyspark; `waterline.Feed` loads
`operations` on the first operation that needs Spark.
"""
