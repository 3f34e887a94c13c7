"""The proof room: evidence that no row was published early.

`commit_record` (when each retained commit committed, by two witnesses, and to what W_T),
`release_proof` (each released row's due instant against its commit), `timeliness` (when rows
became readable), `kept_proofs` (proofs kept past the time-travel window) and `audit` (one Spark
pass per tier against DESIGN's invariants).
"""
