"""`waterline stream SPEC [--once]`: a feed's Kafka sources into the held table, exactly once."""

from __future__ import annotations

import json
import threading

import click

from waterline import load


@click.command("stream")
@click.argument("spec")
@click.option("--once", is_flag=True,
              help="Drain what the topics hold now, then exit (for a scheduled task); default: run until SIGTERM.")
@click.option("--trigger-seconds", default=1.0, show_default=True, type=click.FloatRange(min=0.05),
              help="Without --once: start a micro-batch this often.")
@click.option("--json", "as_json", is_flag=True, help="At the end, print the run (batches, releases, offsets) as JSON.")
def stream(spec: str, once: bool, trigger_seconds: float, as_json: bool) -> None:
    """Read the feed's Kafka topics into held, one commit per micro-batch; release tiers whose
    rows are due at once. SIGTERM or Ctrl-C stops after the current batch (with --once: at
    once), within 120 s whatever the batch is doing."""
    context = click.get_current_context()
    feed = load(spec, quiet=not context.find_root().params.get("verbose"))
    if not feed.spec.is_stream:
        raise click.UsageError(f"feed {feed.name} has no Kafka source (format: kafka): `waterline ingest` reads it")
    stop = threading.Event()
    # running: the first signal stops after the current batch; a drain stops at once. Either
    # way the run ends within the grace, its lease given back (`Feed.stoppable`).
    with feed.stoppable("stream", stop=None if once else stop):
        done = feed.stream(once=once, trigger_seconds=trigger_seconds, stop=stop,
                           on_batch=None if as_json else lambda batch: click.echo(batch.summary()))
    if as_json:
        click.echo(json.dumps({"feed": done.feed, "batches": [b.to_dict() for b in done.batches],
                               "releases": [r.to_dict() for r in done.releases], "offsets": done.offsets}, indent=2))
    else:
        click.echo(done.summary())
        for source, topics in done.offsets.items():
            click.echo(f"  {source}: offsets reached {json.dumps(topics, sort_keys=True)}")
