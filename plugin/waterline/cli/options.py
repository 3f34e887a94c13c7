"""What every `waterline` verb shares: the global options, accepted after the verb too, and
the line a deprecated spelling prints.

Global options (``-v/--verbose``) belong to the group, but a cron line or a script is written
verb first (``waterline release feeds/ticks.yaml --verbose``), so `WaterlineGroup` gives every
command and sub-group it holds the same option; whichever place sets it, the root's
``verbose`` is what the commands read.
"""

from __future__ import annotations

from typing import Any

import click

GLOBAL_OPTIONS = ("verbose",)


def _set_verbose(context: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        context.find_root().params["verbose"] = True


def verbose_option() -> click.Option:
    """``-v/--verbose`` on a command: sets the root's ``verbose`` (tracebacks, the JVM's output)."""
    return click.Option(["-v", "--verbose"], is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_verbose, help="Show tracebacks on errors (also accepted before the verb).")


def with_global_options(command: click.Command) -> click.Command:
    """``command`` (and, for a group, every command in it) accepting the global options."""
    if not any(param.name == "verbose" for param in command.params):
        command.params.append(verbose_option())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_global_options(sub)
    return command


class WaterlineGroup(click.Group):
    """The ``waterline`` group: each command added gets the global options (`with_global_options`)."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(with_global_options(cmd), name)


def verbose() -> bool:
    """Whether ``--verbose`` was given, before or after the verb."""
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("verbose"))


def deprecated(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works in this release; ``new`` is the spelling to use."""
    click.echo(f"warning: {old} is deprecated and goes in the next release; use {new}", err=True)


def old_name(option: str, new: str) -> Any:
    """A hidden option ``option``, the deprecated name of ``new``: its value is kept aside in the
    context (`old_value`), not passed to the command, whose signature names only ``new``."""

    def keep(context: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value is not None:
            context.meta[f"waterline.old:{option}"] = value

    return click.option(option, expose_value=False, hidden=True, callback=keep, help=f"Deprecated: {new}.")


def old_value(option: str) -> str | None:
    """The value given under the deprecated name ``option`` (`old_name`), if any."""
    return click.get_current_context().meta.get(f"waterline.old:{option}")


def json_line(data: Any) -> str:
    """A result as the JSON `--json` prints (indented; instants as µs, anything else as text)."""
    import json

    return json.dumps(data, indent=2, default=str)
