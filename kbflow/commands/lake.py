"""The lake's upkeep: ``kbflow status``, ``remove``, ``tag``, ``versions`` and ``gc``."""

from __future__ import annotations

import json
import sys

import click

from kbflow._cliopts import _lake_option
from kbflow.commands.common import _settings, _wait_option, for_terminal


@click.command()
@_lake_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--stale",
    is_flag=True,
    help="Only list sources whose files changed since they were indexed (fingerprints only; nothing is ingested). "
    "Exit status 3 when any is stale.",
)
@click.pass_context
def status(ctx: click.Context, as_json: bool, stale: bool) -> None:
    """Registered sources, their status and chunk counts, and the table versions."""
    from kbflow.lake import Lake

    lake = Lake(_settings(ctx).lake, create=False)
    if stale:
        from kbflow.pipeline import stale_sources

        found = stale_sources(lake)
        if as_json:
            click.echo(json.dumps({"lake": lake.uri, "stale": [item.__dict__ for item in found]}))
        else:
            for item in found:
                click.echo(f"{item.source_id:<24} {item.reason}" + (f"  ({item.detail})" if item.detail else ""))
            if not found:
                click.echo("every source is up to date")
        if found:
            sys.exit(3)
        return
    sources = lake.sources()
    versions = lake.versions()
    if as_json:
        rows = [s.to_dict() for s in sources]
        click.echo(json.dumps({"lake": lake.uri, "sources": rows, "versions": versions}))
        return
    click.echo(f"lake: {lake.uri}")
    if not sources:
        click.echo("no sources registered; add one with `kbflow add PATH --type TYPE`")
    for s in sources:
        when = s.last_indexed.strftime("%Y-%m-%d %H:%M:%S") if s.last_indexed else "never"
        click.echo(
            f"  {s.source_id:<24} {s.source_type:<6} {s.status:<8} {s.chunk_count or 0:>7} chunks  "
            f"indexed {when}  scope {s.scope}"
        )
        click.echo(for_terminal(f"  {'':<24} {s.uri}"))
        if s.issues:
            counts = [f"{len(s.skipped)} files left out"] if s.skipped else []
            counts += [f"{len(s.failed_files)} could not be read"] if s.failed_files else []
            click.echo(f"  {'':<24} {', '.join(counts)} (`kbflow status --json` lists them)")
            for issue in s.failed_files[:3]:
                click.echo(for_terminal(f"  {'':<24}   unreadable: {issue['path']} ({issue['reason']})"))
        if s.last_error:
            click.echo(for_terminal(f"  {'':<24} last error: {s.last_error}"))
    click.echo("versions: " + (", ".join(f"{k} v{v}" for k, v in versions.items()) or "no tables yet"))


@click.command()
@_lake_option
@click.argument("source_ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_wait_option
@click.pass_context
def remove(ctx: click.Context, source_ids: tuple[str, ...], as_json: bool, wait: float) -> None:
    """Remove sources: their rows in every table, then their registry entry (safe to repeat)."""
    from kbflow.lake import Lake
    from kbflow.pipeline import remove_source

    lake = Lake(_settings(ctx).lake, create=False)
    results = [remove_source(lake, sid, wait=wait) for sid in source_ids]
    if as_json:
        click.echo(json.dumps({"removed": [r.__dict__ for r in results]}))
        return
    for r in results:
        rows = sum(n for t, n in r.rows_removed.items() if t != "sources")
        state = "removed" if r.registered else "was not registered"
        click.echo(
            f"{r.source_id}: {state}; {rows} rows deleted ({', '.join(f'{t} {n}' for t, n in r.rows_removed.items())})"
        )


@click.command()
@_lake_option
@click.argument("old_id")
@click.argument("new_id")
@click.option("--no-ingest", is_flag=True, help="Only register the new id; run `kbflow ingest NEW_ID` later.")
@_wait_option
@click.pass_context
def rename(ctx: click.Context, old_id: str, new_id: str, no_ingest: bool, wait: float) -> None:
    """Give source OLD_ID the id NEW_ID (letters, digits, '.', '_', '-'; at most 64), then ingest it again.

    \b
    Its path, type, scope and options stay; its rows are re-made under the new
    id (vectors are re-used). Citations of the old chunks then read as stale.
    """
    from kbflow.lake import Lake
    from kbflow.pipeline import rename_source, run_ingest

    settings = _settings(ctx)
    source = rename_source(Lake(settings.lake, create=False), old_id, new_id, wait=wait)
    click.echo(f"renamed {old_id} to {source.source_id} ({source.source_type}, scope {source.scope}): {source.uri}")
    if no_ingest:
        click.echo(f"run `kbflow ingest {source.source_id}` to index it under its new id")
        return
    summary = run_ingest(settings, [source.source_id], runner="local", wait=wait)
    click.echo(f"{source.source_id}: {summary.sources[0].status if summary.sources else 'done'}")


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
