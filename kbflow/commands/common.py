"""What the commands share: the ``--wait`` option, the settings of a command's lake, text made safe to print."""

from __future__ import annotations

import re
from typing import Any

import click

__all__ = ["_settings", "_wait_option", "for_terminal"]

#: control characters but tab and newline (C0, DEL, C1) and the bidirectional overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """``text`` from the lake made safe to print on a terminal: its control characters and bidirectional
    overrides written as escapes (``\\x1b``, ``\\u202e``). A file's ANSI sequences would otherwise be obeyed by
    the terminal (colours, cursor moves, a cleared screen, the window's title, a write to the clipboard), and
    an override would show code in another order than it runs (Trojan Source)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
