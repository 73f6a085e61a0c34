"""Options shared by the ``kbflow`` command groups (kept apart so each group's module can import them)."""

from __future__ import annotations

import click

__all__ = ["_lake_option"]


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
