"""Delivering tiers to audiences over Delta Sharing (see docs/sharing.md).

`protocol`: the protocol's pure parts; `tokens`: recipients' bearer tokens (hashes
only; a file or an S3 object) and `entitlements`, their trail; `access_records` and
`usage`: what was read, and the monthly report. The server that `waterline share
serve` runs: `app` (the ASGI app: routes, access log, uvicorn), `endpoints` and
`files` (the REST handlers and ``/files``), `server` (the one handle they share: who
may see what), `tables` (tier snapshots, opened once per commit), `locations` (local
folder vs S3: how files are handed out) and `signing` (server-signed file URLs).
Nothing here imports Spark.
"""
