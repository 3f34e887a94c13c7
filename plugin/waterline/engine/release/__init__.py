"""The release room: a feed's tiers brought to a waterline W, plan -> write -> commit.

`release` (the entry: one lease, every tier, the path each takes), `planning` (one planning
loop: what each tier's step changes), `step_context` (a `TierStep`, and the `StepContext` each
writer of a step takes), the two writers of a step's files (`driver_step` and
`step_files` on the driver over Arrow for a small step; the Spark MERGE path in `release`),
`prestage` and `prestaged` (a release written before its instant, committed at it), `prearmed`
(waiting on the trusted clock), `held_stats` (what held's file statistics say about a step) and
`due` (when the next release is due, from a status alone). Modules that need no JVM import no
pyspark (import-linter contract `no-jvm-modules`).
"""
