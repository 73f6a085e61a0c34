"""The lake's upkeep: ``kbflow status``, ``remove``, ``tag``, ``versions`` and ``gc``."""

from __future__ import annotations

import json

import click

from kbflow.cli.options import _lake_option, _settings, _wait_option


@click.command()
@_lake_option
@click.argument("name")
@_wait_option
@click.pass_context
def tag(ctx: click.Context, name: str, wait: float) -> None:
    """Tag the current version of every table NAME: one snapshot of the lake, readable until deleted."""
    from kbflow.lake import Lake

    tagged = Lake(_settings(ctx).lake, create=False).tag(name, wait=wait)
    click.echo(f"tagged {name}: " + ", ".join(f"{t} v{v}" for t, v in tagged.items()))


@click.command()
@_lake_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def versions(ctx: click.Context, as_json: bool) -> None:
    """Every readable version of every table, and the lake's tags."""
    from kbflow.lake import Lake

    lake = Lake(_settings(ctx).lake, create=False)
    history = lake.history()
    snapshots = lake.snapshots()
    if as_json:
        for rows in history.values():
            for row in rows:
                row["timestamp"] = row["timestamp"].isoformat()
        click.echo(json.dumps({"lake": lake.uri, "tables": history, "tags": snapshots}))
        return
    for name, rows in history.items():
        click.echo(f"{name}:")
        for row in rows:
            tags = f"  [{', '.join(row['tags'])}]" if row["tags"] else ""
            click.echo(f"  v{row['version']:<5} {row['timestamp']:%Y-%m-%d %H:%M:%S}{tags}")
    for name, tables in snapshots.items():
        click.echo(f"tag {name}: " + ", ".join(f"{t} v{v}" for t, v in tables.items()))


def _age(text: str):
    from datetime import timedelta

    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    try:
        value, unit = float(text[:-1]), units[text[-1]]
    except (KeyError, ValueError, IndexError):
        raise click.BadParameter(f"{text!r}: use a number and a unit, e.g. 30m, 12h, 7d, 2w") from None
    return timedelta(**{unit: value})


@click.command()
@_lake_option
@click.option("--keep", type=click.IntRange(min=1), default=None, help="Versions to keep per table (newest first).")
@click.option(
    "--older-than",
    "older_than",
    default=None,
    metavar="AGE",
    help="Only remove versions older than AGE (30m, 12h, 7d, 2w).",
)
@click.option(
    "--log-days",
    "log_days",
    type=click.IntRange(min=0),
    default=None,
    help="Drop query and citation log rows older than this many days; 0 keeps them all "
    "[default: $KBFLOW_LOG_DAYS, else 90].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_wait_option
@click.pass_context
def gc(
    ctx: click.Context, keep: int | None, older_than: str | None, log_days: int | None, as_json: bool, wait: float
) -> None:
    """Drop log rows past their retention, then (with --keep and/or --older-than) delete old table versions
    (tagged and latest versions always stay)."""
    from kbflow import usage
    from kbflow.lake import Lake

    settings = _settings(ctx)
    days = settings.log_days if log_days is None else log_days
    lake = Lake(settings.lake, create=False)
    pruned = usage.prune(lake, days)
    stats = {}
    if keep is not None or older_than is not None:
        stats = lake.gc(keep=keep, older_than=_age(older_than) if older_than else None, wait=wait)
    if as_json:
        click.echo(json.dumps({"log_rows_removed": pruned, "log_days": days, "tables": stats}))
        return
    kept = f"logs keep {days} days" if days else "logs keep every row"
    removed = ", ".join(f"{n} {name} rows" for name, n in pruned.items()) or "no log rows"
    click.echo(f"{removed} removed ({kept})")
    for name, st in stats.items():
        click.echo(f"{name}: {st['versions_removed']} versions removed, {st['bytes_removed']} bytes freed")
    if not stats:
        click.echo("table versions kept: give --keep N and/or --older-than AGE to delete old ones")
