"""The tables room: a feed's own tables, its lease and its status.

`feed_tables` (`FeedTables`: one handle per operation on a feed's tables, no JVM), `spark_tables`
(creating held and the tiers, reading them in Spark), `lease` (the per-feed lease
in the store itself), `status` (a feed's status from commit metadata only, no JVM), `control`
(hold and resume a tier) and `stopping` (SIGTERM/SIGINT end a run within its grace, leases given
back).
"""
