"""The engine's Spark room: everything that needs a Spark session (and so pyspark).

Session start-up (local, cluster, Spark Connect), reading a partition's
output, ingest, release (and pre-armed release runs), GC, hold/resume, and a
local standalone cluster (`cluster`, which manages processes and imports no
pyspark). Nothing outside this room imports pyspark; `waterline.Feed` loads
`operations` on the first operation that needs Spark.
"""
