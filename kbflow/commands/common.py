"""What the commands share: the ``--wait`` option, the settings of a command's lake, text made safe to print."""

from __future__ import annotations

from typing import Any

import click

from kbflow.terms import for_terminal

__all__ = ["_settings", "_wait_option", "for_terminal"]


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
