"""Click commands. Each loads the spec, calls the engine and renders the result."""

from __future__ import annotations

import json


import click

from waterline.errors import WaterlineError

from waterline.cli import render


def _spec(path: str):
    from waterline.spec import load_spec

    return load_spec(path)


def _spark(feed=None):
    """The session for ``feed``: its `spark:` key, overridden by WATERLINE_SPARK_MASTER/REMOTE.

    Called only after every argument and the spec are checked: a bad input never waits for
    a JVM. Unless --verbose, the JVM's own lines go to a log file, not the terminal, and
    PySpark's JSON copies of SQL errors are off (`engine.jvm_log.quiet_session`).
    """
    from waterline.engine.jvm_log import quiet_session

    return quiet_session(getattr(feed, "spark", None), quiet=not _verbose())[0]


def _verbose() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("verbose"))


def _instant(text: str | None) -> int | None:
    from waterline.clock import parse_instant

    if text is None:
        return None
    try:
        return parse_instant(text)
    except WaterlineError as exc:
        raise WaterlineError(f"--as-of: {exc}") from exc
    except ValueError as exc:
        raise WaterlineError(f"--as-of: not an instant: {text!r} (e.g. 2026-01-05T08:30:00Z)") from exc


def _tier(feed, tier: str) -> str:
    if tier not in feed.tiers:
        raise click.BadParameter(f"unknown tier {tier!r} (tiers: {', '.join(feed.tiers)})", param_hint="--tier")
    return tier


def _partition(feed, key: str, option: str = "--partition") -> str:
    """The partition key checked against the spec's scheme (before any Spark start)."""
    try:
        return feed.partitions.validate(key)
    except WaterlineError as exc:
        raise WaterlineError(f"{option}: {exc}") from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="waterline")
def cli(verbose: bool) -> None:
    """Delayed, embargoed and tiered releases of processed data."""


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", help="Only this tier.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--partition", "-p", "partition",
              help="Also check the policies against this partition's real output (starts Spark).")
def plan(spec: str, tier: str | None, as_json: bool, partition: str | None) -> None:
    """Print each tier's release plan: branches of (guard, start, end).

    Policies may name only columns the feed produces: checked without Spark when the
    transform's select list (or the source's declared schema) names them, and against
    the real output with --partition.
    """
    from waterline.policy import check_policy_columns, compile_policy
    from waterline.spec.columns import output_columns

    feed = _spec(spec)
    if tier:
        _tier(feed, tier)
    tiers = {tier: feed.tiers[tier]} if tier else feed.tiers
    plans = {name: compile_policy(policy, tier=name) for name, policy in tiers.items()}
    known = output_columns(feed)
    if known.names is not None:
        for name, policy in tiers.items():
            check_policy_columns(policy, known.names, tier=name)
        checked = f"columns checked against {known.source}"
    else:
        checked = f"columns not checked: {known.source}; `waterline plan {spec} --partition KEY` checks them " \
                  "against that partition's real output"
    if partition is not None:
        from waterline.engine.schedule import compile_tiers
        from waterline.engine.source import read_output

        key = _partition(feed, partition)
        spark = _spark(feed)
        compile_tiers(spark, feed, read_output(spark, feed, key))  # PolicyError names tier and column
        checked = f"columns and types checked against the output of partition {key}"
    if as_json:
        click.echo(json.dumps({name: p.to_json() for name, p in plans.items()}, indent=2))
        return
    for name, p in plans.items():
        click.echo(f"tier {name}: {feed.tiers[name]}")
        click.echo(render.indent(p.describe()))
    click.echo(checked)


@cli.command()
@click.argument("spec")
@click.option("--partition", "-p", required=True, help="Partition key, e.g. 2026-01-05.")
def ingest(spec: str, partition: str) -> None:
    """Process one partition into the held table."""
    from waterline.engine.ingest import ingest as run

    feed = _spec(spec)
    partition = _partition(feed, partition)
    result = run(_spark(feed), feed, partition)
    click.echo(render.ingest_line(result))


@cli.command()
@click.argument("spec")
@click.option("--from", "first", required=True, help="First partition (inclusive).")
@click.option("--to", "last", required=True, help="Last partition (inclusive).")
def backfill(spec: str, first: str, last: str) -> None:
    """Ingest a range of partitions, in order, with a progress bar."""
    from waterline.engine.ingest import ingest as run

    feed = _spec(spec)
    first, last = _partition(feed, first, "--from"), _partition(feed, last, "--to")
    keys = feed.partitions.keys(first, last)
    if not keys:
        raise click.BadParameter(f"no partitions from {first} to {last}", param_hint="--from/--to")
    spark = _spark(feed)
    results = []
    with click.progressbar(keys, label=f"backfill {feed.feed}", item_show_func=lambda k: k or "") as bar:
        for key in bar:
            results.append(run(spark, feed, key))
    for result in results:
        click.echo(render.ingest_line(result))


@cli.command()
@click.argument("spec")
@click.option("--as-of", "as_of", help="Release up to this instant (capped by the clock and the mode's W).")
@click.option("--wait-until-due", "wait_until_due", is_flag=True,
              help="Start Spark now, wait on the clock for the next due moment, then release at it.")
@click.option("--max-wait", "max_wait", help="With --wait-until-due: wait at most this long (e.g. 90s, 5 minutes).")
def release(spec: str, as_of: str | None, wait_until_due: bool, max_wait: str | None) -> None:
    """Advance the waterline and publish what became due to every tier not on hold."""
    from waterline.engine.release import release as run

    if max_wait and not wait_until_due:
        raise WaterlineError("release: --max-wait needs --wait-until-due")
    if as_of and wait_until_due:
        raise WaterlineError("release: --as-of and --wait-until-due exclude each other (the due moment is the as-of)")
    if wait_until_due:
        from waterline.clock import duration_us, parse_duration
        from waterline.engine.prearmed import release_when_due

        limit = None if max_wait is None else duration_us(parse_duration(max_wait))
        feed = _spec(spec)
        done = release_when_due(_spark(feed), feed, max_wait_us=limit)
        if done.due_us is not None:
            what = "reached" if done.reached else "not reached (--max-wait ran out; released up to the clock)"
            click.echo(f"due moment {render.instant(done.due_us)} {what}")
        click.echo(render.release_table(done.result))
        return
    feed = _spec(spec)
    as_of_us = _instant(as_of)
    result = run(_spark(feed), feed, as_of_us=as_of_us)
    click.echo(render.release_table(result))


@cli.command()
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(spec: str, as_json: bool) -> None:
    """Per tier: W_T, lag behind the clock, pending versions, next due time, hold. No Spark."""
    from waterline.engine.state import read_feed_state

    state = read_feed_state(_spec(spec))
    if as_json:
        click.echo(json.dumps(state.to_dict(), indent=2))
    else:
        click.echo(render.status_table(state))


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", required=True)
def hold(spec: str, tier: str) -> None:
    """Stop releasing a tier: it keeps its rows and W_T."""
    from waterline.engine.control import hold as run

    feed = _spec(spec)
    _tier(feed, tier)
    run(_spark(feed), feed, tier)
    click.echo(f"tier {tier}: on hold")


@cli.command()
@click.argument("spec")
@click.option("--tier", "tier", required=True)
def resume(spec: str, tier: str) -> None:
    """Resume releasing a held tier (the next release catches it up)."""
    from waterline.engine.control import resume as run

    feed = _spec(spec)
    _tier(feed, tier)
    run(_spark(feed), feed, tier)
    click.echo(f"tier {tier}: resumed")


@cli.command()
@click.argument("spec")
def gc(spec: str) -> None:
    """Drop held versions that can never change a tier again, and compact files."""
    from waterline.engine.gc import gc as run

    feed = _spec(spec)
    result = run(_spark(feed), feed)
    click.echo(f"gc {result.feed}: removed {result.versions_removed} of {result.versions_before} held versions")


@cli.command()
@click.option("--root", default=".waterline/demo", show_default=True, help="Folder for the demo's data and tables.")
def demo(root: str) -> None:
    """The whole story on local data: two feeds, ingests, releases stepped through time."""
    from waterline.cli.demo import run_demo

    run_demo(root, echo=click.echo)




from waterline.cli.spark import spark_group  # noqa: E402  (a verb group of its own module)

cli.add_command(spark_group)
