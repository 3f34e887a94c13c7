"""The face of the `waterline` command, consistent across verbs: SPEC first, global options
before or after the verb, ``--json`` on every verb a cron job runs, ``--from/--to`` always
partition keys (instants: ``--as-of``, ``--at``, ``--since/--until``), and the deprecated
spellings still working with a warning. The introspection tests walk the real click tree;
the ``--json`` test runs the verbs on a small feed in this process's Spark session."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml

from tests.cli.test_errors import waterline
from tests.engine.feedkit import spec_dict, write_partition
from waterline.cli import cli, main

#: the verbs a cron job or a scheduler runs: their result must be readable by a script
CRON_VERBS = {"ingest", "backfill", "release", "gc", "hold", "resume", "maintain", "status", "audit", "stream"}
#: commands about no feed (the demo, a developer's local Spark cluster and Kafka broker)
NO_SPEC = {"demo", "spark start", "spark stop", "spark status", "kafka start", "kafka stop", "kafka status",
           "kafka topic"}


def _commands(group: click.Group = cli, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            out |= _commands(command, f"{path} ")
        else:
            out[path] = command
    return out


def _arguments(command: click.Command) -> list[click.Argument]:
    return [p for p in command.params if isinstance(p, click.Argument)]


def test_spec_is_the_first_positional_argument_of_every_verb_that_takes_one():
    ctx = click.Context(cli)
    for path, command in _commands().items():
        if path in NO_SPEC:
            continue
        first = _arguments(command)[0]
        assert first.make_metavar(ctx).startswith("SPEC"), (path, first.make_metavar(ctx))
        assert not [p for p in command.params if "--spec" in getattr(p, "opts", ()) and not p.hidden], path


def test_every_command_and_group_takes_the_global_options_after_the_verb():
    for path, command in _commands().items():
        assert any(p.name == "verbose" and "--verbose" in p.opts for p in command.params), path
    for group in (cli.commands["share"], cli.commands["share"].commands["token"], cli.commands["report"]):
        assert any(p.name == "verbose" for p in group.params), group.name


def test_every_verb_a_cron_job_runs_has_json():
    commands = _commands()
    for verb in CRON_VERBS:
        assert any("--json" in getattr(p, "opts", ()) for p in commands[verb].params), verb


def test_from_and_to_are_partition_keys_wherever_they_are_shown():
    for path, command in _commands().items():
        shown = {o for p in command.params if not getattr(p, "hidden", False) for o in getattr(p, "opts", ())}
        if {"--from", "--to"} & shown:
            assert path == "backfill", path
    helps = {p.opts[0]: p.help for p in _commands()["backfill"].params if isinstance(p, click.Option)}
    assert "partition" in helps["--from"] and "partition" in helps["--to"]


def test_verbose_after_the_verb_shows_the_traceback(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    quiet = waterline("status", missing)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    for args in (("status", missing, "--verbose"), ("status", "-v", missing), ("--verbose", "status", missing)):
        loud = waterline(*args)
        assert loud.returncode == 2, (args, loud.stderr)
        assert "Traceback" in loud.stderr and loud.stderr.strip().splitlines()[-1].startswith("error: "), args


def _token_spec(tmp_path: Path) -> Path:
    spec_file = tmp_path / "f.yaml"
    spec_file.write_text(yaml.safe_dump({**spec_dict(tmp_path, {"all": "TRUE"}), "audiences": {"acme": ["all"]}}))
    return spec_file


def test_share_token_takes_spec_first_and_the_old_spec_option_with_a_warning(tmp_path):
    spec = str(_token_spec(tmp_path))
    made = waterline("share", "token", "create", spec, "acme", "--expires", "1d", cwd=tmp_path)
    assert made.returncode == 0 and "warning" not in made.stderr, made.stderr
    old = waterline("share", "token", "create", "acme", "--spec", spec, cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert old.stderr.startswith("warning: --spec is deprecated"), old.stderr
    assert json.loads(old.stdout)["bearerToken"].startswith("wlds_")

    listed = json.loads(waterline("share", "token", "list", spec, "--json", cwd=tmp_path).stdout)
    assert [(t["recipient"], t["state"]) for t in listed] == [("acme", "active"), ("acme", "active")]
    old_list = waterline("share", "token", "list", "acme", "--spec", spec, cwd=tmp_path)
    assert old_list.returncode == 0 and old_list.stdout.count("acme  active") == 2, old_list
    assert old_list.stderr.startswith("warning: --spec is deprecated")
    assert waterline("share", "token", "list", spec, "--recipient", "nobody", "--json", cwd=tmp_path).stdout.strip() \
        == "[]"

    revoked = waterline("share", "token", "revoke", spec, "acme", cwd=tmp_path)
    assert revoked.returncode == 0 and revoked.stdout.startswith("revoked 2 token(s) of acme"), revoked
    for args in (("create", spec), ("create", "acme", "--spec", spec, "extra"), ("list",)):
        bad = waterline("share", "token", *args, cwd=tmp_path)
        assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("error: "), (args, bad.stderr)


def test_audit_since_until_and_the_deprecated_from_to(tmp_path):
    spec = str(_token_spec(tmp_path))
    old = waterline("audit", spec, "--from", "not a time")
    assert old.returncode == 2
    lines = old.stderr.strip().splitlines()
    assert lines[0].startswith("warning: audit --from is deprecated") and "--since" in lines[0], lines
    assert lines[1].startswith("error: --from: "), lines  # the error names the option as it was given
    new = waterline("audit", spec, "--since", "not a time")
    assert new.returncode == 2 and new.stderr.startswith("error: --since: "), new.stderr
    both = waterline("audit", spec, "--since", "2026-01-05T00:00:00Z", "--from", "2026-01-05T00:00:00Z")
    assert both.returncode == 2 and "give --since only" in both.stderr, both.stderr
    order = waterline("audit", spec, "--since", "2026-01-06T00:00:00Z", "--until", "2026-01-05T00:00:00Z")
    assert order.returncode == 2 and "--until 2026-01-05T00:00:00Z is before --since" in order.stderr, order.stderr


def _run(capsys, *args: str) -> dict | list:
    main(list(args))
    return json.loads(capsys.readouterr().out)


ROW = {"event_time": "2026-01-05T10:00:00", "status": "ok", "embargo_until": None, "v": "x"}


@pytest.mark.spark
def test_the_cron_verbs_print_json(spark, tmp_path, capsys):
    spec = str(_token_spec(tmp_path))
    for number, partition in enumerate(("a", "b", "c"), start=1):
        write_partition(tmp_path, partition, [{**ROW, "id": number}])

    ingested = _run(capsys, "ingest", spec, "--partition", "a", "--json")
    assert (ingested["partition"], ingested["inserted"]) == ("a", 1), ingested
    backfilled = _run(capsys, "backfill", spec, "--from", "b", "--to", "c", "--json")
    assert [r["partition"] for r in backfilled["partitions"]] == ["b", "c"], backfilled
    assert [r["inserted"] for r in backfilled["partitions"]] == [1, 1]

    released = _run(capsys, "release", spec, "--as-of", "2026-01-05T12:00:00Z", "--json")
    assert released["tiers"]["all"]["released"] == 3, released
    assert released["w_us"] == released["tiers"]["all"]["w_us"] == 1_767_614_400_000_000

    held = _run(capsys, "hold", spec, "--tier", "all", "--json")
    assert (held["tier"], held["hold"], held["w_us"]) == ("all", True, released["w_us"]), held
    resumed = _run(capsys, "resume", spec, "--tier", "all", "-v", "--json")
    assert (resumed["tier"], resumed["hold"]) == ("all", False), resumed

    collected = _run(capsys, "gc", spec, "--json")
    assert collected["feed"] == "f" and collected["versions_before"] >= 3, collected

    proven = _run(capsys, "audit", spec, "--since", "2020-01-01T00:00:00Z", "--json")
    assert set(proven) == {"all"} and proven["all"]["breaches"] == [] and proven["all"]["unproven"] == [], proven
