"""Spark + Delta engine: session, held table, ingest, release, GC, status."""
