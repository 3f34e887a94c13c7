"""The demo feeds (ticks, indicators) as a Dagster project: see defs/*/defs.yaml."""
