"""``kbflow add``, ``status``, ``remove`` and ``rename``: the source registry from the command line (every rule is
:func:`kbflow.pipeline.register_source`'s, the one every surface calls)."""

from __future__ import annotations

import json
import sys

import click

from kbflow.cli.options import _lake_option, _settings, _wait_option, for_terminal

_HELP_TYPES = (
    "docs (Markdown/text/notebook folder or file), repo (code repository), jsonl (BEIR-style records), "
    "pdf (PDF file or folder), web (saved .html pages), ticket (JSON issue exports)"
)


@click.command()
@_lake_option
@click.argument("path")
@click.option("--type", "source_type", required=True, help=f"Source type: {_HELP_TYPES}.")
@click.option("--id", "source_id", default=None, help="Source id (default: from the path's name).")
@click.option(
    "--scope",
    default=None,
    help="Scope path (acme, acme/payments): seen by searches in it or below it; 'global' sources by every search. "
    "Default: global for a new source; a registered one keeps its own.",
)
@click.option("--title", default=None, help="A human title for the source.")
@click.option(
    "--max-file-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Size limit of one file in MiB, stored with the source. Defaults: repo 1, docs 4, web 16, ticket 64, "
    "pdf 256, jsonl none (a notebook: 16x, its text within the limit). Larger files are left out and reported.",
)
@click.option(
    "--all-pages/--site-pages",
    "all_pages",
    default=None,
    help="web: keep every page, also those the site marks as not for search (robots noindex, redirect stubs, "
    "copies whose rel=canonical names another page); by default they are left out and listed.",
)
@click.option(
    "--crawl/--no-crawl",
    "crawl",
    default=None,
    help="web, with an http(s) URL: the whole site under the URL's folder (its sitemap.xml and the links from "
    "the page, honoring robots.txt and noindex, waiting between requests; unchanged pages are not fetched again).",
)
@click.option(
    "--depth",
    type=click.IntRange(0, 50),
    default=None,
    help="--crawl: links followed from the URL [3]; the site's own navigation (its table of contents, frames, "
    "next and previous chapter) does not count.",
)
@click.option("--max-pages", type=click.IntRange(1, 100_000), default=None, help="--crawl: pages at most [500].")
@click.option(
    "--delay",
    type=click.FloatRange(0, 60),
    default=None,
    help="--crawl: seconds between requests [1, or the site's robots.txt Crawl-delay when longer].",
)
@click.option(
    "--allow-private",
    "allow_private",
    multiple=True,
    metavar="HOST|NET",
    help="web: a private host, host:port or network (10.20.0.0/16) this source's fetches may reach (a team's "
    "intranet docs); repeatable. Every other private address stays refused.",
)
@click.option(
    "--fields",
    default=None,
    metavar="SPEC",
    help="jsonl: the keys of each record's id, title and text where they are not BEIR's _id, title, text, as "
    "id=KEY,title=KEY,text=KEY (any of the three; e.g. id=doc_id,text=abstract).",
)
@click.option(
    "--refresh",
    default=None,
    metavar="CRON",
    help="Refresh this source on a schedule, e.g. '0 */6 * * *': a Dagster schedule of its own ('none' removes it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the registered source as one JSON object.")
@click.pass_context
def add(
    ctx: click.Context,
    path: str,
    source_type: str,
    source_id: str | None,
    scope: str | None,
    title: str | None,
    max_file_mb: float | None,
    all_pages: bool | None,
    crawl: bool | None,
    depth: int | None,
    max_pages: int | None,
    delay: float | None,
    allow_private: tuple[str, ...],
    fields: str | None,
    refresh: str | None,
    as_json: bool,
) -> None:
    """Register PATH as a source (nothing is loaded until `kbflow ingest`).

    PATH is a file or folder, or for --type web an http(s):// URL (fetched at
    ingest behind a guard that refuses private, loopback and link-local
    addresses; the bytes fetched are kept in the lake).
    """
    from kbflow.errors import ConfigError
    from kbflow.lake import Lake
    from kbflow.pipeline import register_source
    from kbflow.pipeline.registration import REFRESH_OPTION

    lake = Lake(_settings(ctx).lake)
    limits = {"depth": depth, "max_pages": max_pages, "delay": delay}
    changes = {
        "max_file_mb": max_file_mb,
        "all_pages": all_pages,
        "refresh": refresh,
        "crawl": crawl,
        "crawl_limits": {k: v for k, v in limits.items() if v is not None} or None,
        "fields": fields,
        "allow_private": list(allow_private) or None,
    }
    try:
        added = register_source(lake, path, source_type, source_id=source_id, scope=scope, title=title, options=changes)
    except ConfigError as exc:  # an option misused: a usage error (exit 2), as click reports its own
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(added.to_dict()))
        return
    source, options = added.source, added.source.options
    click.echo(f"registered {source.source_id} ({source.source_type}, scope {source.scope}): {source.uri}")
    if options.get(REFRESH_OPTION):
        click.echo(
            f"  refreshed on the schedule '{options[REFRESH_OPTION]}' by Dagster (schedule refresh_{source.source_id};"
            " reload the code location of a running `dagster dev` to pick it up)"
        )
    for issue in added.left_out[:10]:
        click.echo(for_terminal(f"  will be left out: {issue}"))
    if added.left_out_total > 10:
        click.echo(f"  ... and {added.left_out_total - 10} more (see `kbflow status --json` after ingest)")
    click.echo(f"lake: {lake.uri}; run `kbflow ingest` to load it")


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
