"""The ingest room: one partition's processed output into held as versions.

`source` (sources -> views -> transform -> output), `validate` (quarantine, duplicate keys,
schema drift), `profile` (one aggregate pass: counts, event times, fingerprint), `schedule`
(tier policies compiled against the output, rows tagged with their release times),
`versions` (the diff against held), `held_append` (files Spark writes, one commit waterline
writes), `appended_keys` (duplicate keys among those files) and `ingest` (the entry).
"""
