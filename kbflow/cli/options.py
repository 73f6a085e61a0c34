"""What the commands share: the ``--lake`` and ``--wait`` options, the settings of a command's lake, text made safe
to print."""

from __future__ import annotations

from typing import Any

import click

from kbflow.text.terms import for_terminal

__all__ = ["_lake_option", "_settings", "_wait_option", "for_terminal"]


def _lake_option(fn):
    """``--lake URI`` after the subcommand too (``kbflow add PATH --lake X``); it wins over the group's."""

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value is not None:
            ctx.ensure_object(dict)["lake"] = value

    return click.option(
        "--lake",
        default=None,
        metavar="URI",
        expose_value=False,
        callback=remember,
        help="The lake (as before the command): a folder or any Lance URI.",
    )(fn)


def _wait_option(fn):
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=0.0,
        show_default=True,
        metavar="SECONDS",
        help="If another kbflow process is writing the lake, wait this long for it (then exit 75).",
    )(fn)


def _settings(ctx: click.Context, **overrides: Any):
    from kbflow.config import Settings

    return Settings.coerce(None, lake=ctx.obj["lake"], **overrides)
