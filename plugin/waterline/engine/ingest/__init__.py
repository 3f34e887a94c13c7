"""The ingest room: versions into held, two ways in. A partition's processed output replaces
the partition (`ingest`); a stream's micro-batch upserts its records (`stream`, a sub-room
with its own docstring). Both share the steps below, so a stream batch never leaves this room
for anything but the feed's tables and the generic rooms (spark, delta, core).

`source` (sources -> views -> transform -> output), `validate` (quarantine, duplicate keys,
schema drift), `profile` (one aggregate pass: counts, event times, fingerprint), `versions` (the diff against held), `held_append` (files Spark writes, one commit waterline
writes), `appended_keys` (duplicate keys among those files), `collected_versions` and `row_errors`
(a stream batch's versions and failing rows) and `ingest` (a partition's entry).
"""
