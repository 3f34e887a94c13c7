"""Delivering tiers to audiences over Delta Sharing (see docs/sharing.md).

`protocol`: the protocol's pure parts; `tokens`: recipients' bearer tokens (hashes
only; a file or an S3 object); `server`: the ASGI app (Starlette) that `waterline
share serve` runs, with `endpoints` (the REST handlers), `files` (server-signed file
URLs and ``/files``) and `locations` (local folder vs S3: how files are handed out).
Nothing here imports Spark.
"""
