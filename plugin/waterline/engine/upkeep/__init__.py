"""The upkeep room: a feed's tables kept small and clean over its life.

`gc` (held versions that can never change a tier again), `maintain` (compaction, vacuum,
checkpoints, log cleanup, orphan stages) and `leftovers` (files log cleanup and vacuum leave).
"""
