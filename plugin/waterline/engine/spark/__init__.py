"""The Spark toolbox: what every room that runs Spark shares, and nothing feed-specific.

`config` (where Spark runs and with which conf, plain data), `jars` (which jars a start gets
and from where), `session` (the process's session, classic or Spark Connect, with Delta),
`functions` (SQL functions policies use), `local_frames` (rows between Spark and the driver),
`errors` and `conflicts` (Spark's exceptions as one line), `views`, `observed`, `commits`,
`committer` and `jvm_log`.
"""
