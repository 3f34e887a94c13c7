"""Click commands: each loads the feed, calls one `waterline.Feed` method and renders its result.

The face every verb keeps: SPEC (the feed spec's YAML) is the first positional argument;
``--json`` prints the result for scripts and cron jobs; ``--from/--to`` are always partition
keys (``backfill``) and instants are ``--as-of``, ``--at`` or ``--since/--until`` (``audit``);
``-v/--verbose`` goes before or after the verb (`waterline.cli.options`).
"""

from __future__ import annotations

import json

import click

from waterline.cli import render
from waterline.cli.options import WaterlineGroup, deprecated, json_line, old_name, old_value, verbose
from waterline.cli.kafka import kafka_group
from waterline.cli.spark import spark_group
from waterline.cli.stream import stream
from waterline.clock import parse_duration, parse_instant
from waterline.engine.core.results import feed_verdict
from waterline.errors import WaterlineError
from waterline.extras import require
from waterline.feed import Feed, load

#: `waterline audit`: a row released before it was due, or commits the proof could not see.
EXIT_NOT_PROVEN = 3


def _feed(spec: str) -> Feed:
    """The feed of ``spec``. Spark starts only inside the method that needs it, after every
    argument and the spec are checked: a bad input never waits for a JVM. Unless --verbose,
    the JVM's own lines go to a log file, not the terminal, and PySpark's JSON copies of
    SQL errors are off."""
    return load(spec, quiet=not verbose())


_JSON = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def _tier(feed: Feed, tier: str) -> str:
    if tier not in feed.tiers:
        raise click.BadParameter(f"unknown tier {tier!r} (tiers: {', '.join(feed.tiers)})", param_hint="--tier")
    return tier


@click.group(cls=WaterlineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks on errors (also accepted after the verb).")
@click.version_option(package_name="waterline-tiers")
def cli(verbose: bool) -> None:
    """Delayed, embargoed and tiered releases of processed data."""


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", help="Only this tier.")
@_JSON
@click.option("--partition", "-p", "partition",
              help="Also check the policies against this partition's real output (starts Spark).")
@click.option("--no-counts", "no_counts", is_flag=True,
              help="Show a pending change without counting its new and changed tiers (no Spark).")
def plan(spec: str, tier: str | None, as_json: bool, partition: str | None, no_counts: bool) -> None:
    """Print each tier's release plan: branches of (guard, start, end), then what the file
    changes against the applied spec, counted.

    Policies may name only columns the feed produces: checked without Spark when the
    transform's select list (or the source's declared schema) names them, and against
    the real output with --partition. A new or changed tier on a released feed is counted
    with Spark over held, read only (what its next release does at the feed's W).
    """
    feed = _feed(spec)
    if tier:
        _tier(feed, tier)
    result = feed.plan(tier, partition=_option(partition, "--partition", feed) if partition else None,
                       counts=not no_counts)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    click.echo(result.describe())
    if not result.columns_checked:
        click.echo(f"  (`waterline plan {spec} --partition KEY` checks them against that partition's real output)")


def _option(value: str, option: str, feed: Feed) -> str:
    """A partition option checked against the scheme, its error naming the option."""
    try:
        return feed.spec.partitions.validate(value)
    except WaterlineError as exc:
        raise WaterlineError(f"{option}: {exc}") from None


@cli.command()
@click.argument("spec")
def apply(spec: str) -> None:
    """Make a changed spec take effect (`waterline plan SPEC` shows what changes)."""
    applied, diff = _feed(spec).apply()
    if not diff:
        click.echo(f"nothing to apply: spec version {applied.version} is in force")
        return
    click.echo(f"spec version {applied.version} applied:")
    for line in diff.lines():
        click.echo(f"  {line}")


@cli.command()
@click.argument("spec")
@click.option("--partition", "-p", required=True, help="Partition key, e.g. 2026-01-05.")
@_JSON
def ingest(spec: str, partition: str, as_json: bool) -> None:
    """Process one partition into the held table."""
    feed = _feed(spec)
    result = feed.ingest(_option(partition, "--partition", feed))
    click.echo(json_line(result.to_dict()) if as_json else render.ingest_line(result))


@cli.command()
@click.argument("spec")
@click.option("--from", "first", required=True, help="First partition key (inclusive).")
@click.option("--to", "last", required=True, help="Last partition key (inclusive).")
@_JSON
def backfill(spec: str, first: str, last: str, as_json: bool) -> None:
    """Ingest a range of partitions, in order, with a progress bar (none with --json)."""
    feed = _feed(spec)
    first, last = _option(first, "--from", feed), _option(last, "--to", feed)
    if not feed.spec.partitions.keys(first, last):
        raise click.BadParameter(f"no partitions from {first} to {last}", param_hint="--from/--to")
    results = feed.backfill(first, last, progress=not as_json)
    if as_json:
        click.echo(json_line({"feed": feed.name, "partitions": [r.to_dict() for r in results]}))
        return
    for result in results:
        click.echo(render.ingest_line(result))


@cli.command()
@click.argument("spec")
@click.option("--as-of", "as_of", help="Release up to this instant (capped by the clock and the mode's W).")
@click.option("--wait-until-due", "wait_until_due", is_flag=True,
              help="Start Spark now, wait on the clock for the next due moment, then release at it.")
@click.option("--max-wait", "max_wait", help="With --wait-until-due: wait at most this long (e.g. 90 seconds, 5 minutes).")
@_JSON
def release(spec: str, as_of: str | None, wait_until_due: bool, max_wait: str | None, as_json: bool) -> None:
    """Advance the waterline and publish what became due to every tier not on hold."""
    if max_wait and not wait_until_due:
        raise WaterlineError("release: --max-wait needs --wait-until-due")
    if as_of and wait_until_due:
        raise WaterlineError("release: --as-of and --wait-until-due exclude each other (the due moment is the as-of)")
    feed = _feed(spec)
    as_of_us = None if as_of is None else _parsed(parse_instant, as_of, "--as-of", now_us=feed.clock.now_us)
    limit = None if max_wait is None else _parsed(parse_duration, max_wait, "--max-wait")
    with feed.stoppable("release"):  # SIGTERM / Ctrl-C: stopped within the grace, the lease given back
        result = feed.release(as_of=as_of_us, wait_until_due=wait_until_due, max_wait=limit)
    if as_json:
        click.echo(json_line(result.to_dict()))
        return
    if result.waited_for_us is not None:
        what = "reached" if result.reached else "not reached (--max-wait ran out; released up to the clock)"
        click.echo(f"due moment {render.instant(result.waited_for_us)} {what}")
    click.echo(render.release_table(result))


def _parsed(parse, text: str, option: str, **kwargs):
    try:
        return parse(text, **kwargs)
    except (WaterlineError, ValueError) as exc:
        raise WaterlineError(f"{option}: {exc}") from None


@cli.command()
@click.argument("spec")
@_JSON
def status(spec: str, as_json: bool) -> None:
    """Per tier: W_T, lag behind the clock, pending versions, next due time, hold. No Spark.

    A warehouse holding no table of the feed (nothing ingested yet, or the spec's warehouse
    is not where the feed lives) is refused, exit 2, rather than shown as an empty feed."""
    feed = _feed(spec)
    state = feed.status()
    if not state.exists:
        raise WaterlineError(f"feed {feed.name}: no feed at {feed.spec.feed_dir} (no held table, no tier table): "
                             "nothing was ingested yet, or the spec's warehouse is not where the feed lives")
    click.echo(json.dumps(state.to_dict(), indent=2) if as_json else render.status_table(state))


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", required=True)
@_JSON
def hold(spec: str, tier: str, as_json: bool) -> None:
    """Stop releasing a tier: it keeps its rows and W_T."""
    feed = _feed(spec)
    state = feed.hold(_tier(feed, tier))
    click.echo(json_line(_tier_state(feed, state)) if as_json else f"tier {tier}: on hold")


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", required=True)
@_JSON
def resume(spec: str, tier: str, as_json: bool) -> None:
    """Resume releasing a held tier (the next release catches it up)."""
    feed = _feed(spec)
    state = feed.resume(_tier(feed, tier))
    click.echo(json_line(_tier_state(feed, state)) if as_json else f"tier {tier}: resumed")


def _tier_state(feed: Feed, state) -> dict:
    return {"feed": feed.name, "tier": state.tier, "hold": state.hold, "w_us": state.w, "w": render.instant(state.w),
            "seq": state.seq, "pending": state.pending, "next_due_us": state.next_due}


@cli.command()
@click.argument("spec")
@_JSON
def gc(spec: str, as_json: bool) -> None:
    """Drop held versions that can never change a tier again, compact files, and delete files
    of pre-staged releases that never committed."""
    result = _feed(spec).gc()
    if as_json:
        click.echo(json_line(result.to_dict()))
        return
    click.echo(f"gc {result.feed}: removed {result.versions_removed} of {result.versions_before} held versions"
               + (f", {result.staged_files_removed} uncommitted staged files" if result.staged_files_removed else ""))


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", help="Only this tier (default: every tier and the held table).")
@_JSON
def maintain(spec: str, tier: str | None, as_json: bool) -> None:
    """Compact small files, vacuum files past the spec's maintenance.time_travel, checkpoint
    and clean the log, and delete stages that never committed; under the feed lease."""
    feed = _feed(spec)
    result = feed.maintain(_tier(feed, tier) if tier else None)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    for table in result.tables.values():
        click.echo(table.summary(result.feed))


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", help="Only this tier.")
@click.option("--since", "since", help="Only commits from this instant (ISO 8601, UTC unless it says otherwise).")
@click.option("--until", "until", help="Only commits up to this instant.")
@old_name("--from", "--since")
@old_name("--to", "--until")
@_JSON
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True),
              help="Also write the proof as one self-contained page (timelines, breaches, entitlement changes).")
def audit(spec: str, tier: str | None, since: str | None, until: str | None, as_json: bool,
          html_file: str | None) -> None:
    """Prove every release was on time: for each row each commit released, the instant it became
    due (recomputed from the row and the tier's policy in the spec version it was released
    under) against when the commit happened.
    Exit 3 when a row was released early or some commits could not be proven."""
    since, since_name = _renamed(old_value("--from"), "--from", since, "--since")
    until, until_name = _renamed(old_value("--to"), "--to", until, "--until")
    feed = _feed(spec)
    tiers = [tier if tier in feed.retired_tiers() else _tier(feed, tier)] if tier else None
    start = None if since is None else _parsed(parse_instant, since, since_name, now_us=feed.clock.now_us)
    end = None if until is None else _parsed(parse_instant, until, until_name, now_us=feed.clock.now_us)
    if start is not None and end is not None and end < start:
        raise WaterlineError(f"audit: {until_name} {render.instant(end)} is before {since_name} {render.instant(start)}")
    proofs = feed.audit_history(start, end, tiers=tiers)
    if html_file:
        require("--html", "plotly")
        from waterline.cli.pages import write_audit_page  # import cost: plotly, only for --html

        write_audit_page(feed, proofs, html_file, from_=since, to=until)
    if as_json:
        click.echo(json.dumps({t: p.to_dict() for t, p in proofs.items()}, indent=2, default=str))
    else:
        click.echo(render.proof_report(feed.spec.feed, proofs))
    if feed_verdict(proofs.values()) != "clean":
        raise click.exceptions.Exit(EXIT_NOT_PROVEN)


def _renamed(old_value: str | None, old: str, new_value: str | None, new: str) -> tuple[str | None, str]:
    """An option's value under its new name, or its old one (deprecated; not both), and the
    name it was given under (for error lines)."""
    if old_value is None:
        return new_value, new
    if new_value is not None:
        raise click.UsageError(f"give {new} only ({old} is its deprecated name)")
    deprecated(f"audit {old}", f"{new} (--from/--to are partition keys, as in backfill)")
    return old_value, old


@cli.command()
@click.option("--root", default=None, help="Folder for the demo's data and tables "
              "[default: .waterline/demo, .waterline/stream-demo with --stream].")
@click.option("--stream", "as_stream", is_flag=True,
              help="The stream demo: ticks on a local Kafka broker, the tiers following them.")
@click.option("--seconds", type=click.FloatRange(min=5), default=90, show_default=True,
              help="With --stream: how long to produce ticks (wall clock).")
@click.option("--speed", type=click.FloatRange(min=1), default=30, show_default=True,
              help="With --stream: how many times faster than the wall clock the demo clock runs.")
def demo(root: str | None, as_stream: bool, seconds: float, speed: float) -> None:
    """The whole story on local data: two feeds, ingests, releases stepped through time
    (with --stream: a tick stream with corrections and cancels, released as it arrives)."""
    if as_stream:
        require("waterline demo --stream", "confluent_kafka")
        from waterline.cli.stream_demo import run_stream_demo

        run_stream_demo(root or ".waterline/stream-demo", seconds=seconds, speed=speed, echo=click.echo)
        return
    from waterline.cli.demo import run_demo  # import cost: pyarrow.dataset (~0.25 s) only the demo needs

    run_demo(root or ".waterline/demo", echo=click.echo)


cli.add_command(spark_group)
cli.add_command(kafka_group)
cli.add_command(stream)
