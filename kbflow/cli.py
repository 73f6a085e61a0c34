"""The ``kbflow`` command: register sources, ingest them through Dagster, search with citations.

Every command takes ``--lake URI`` (default ``$KBFLOW_LAKE`` or ``./data/lake``);
the source registry lives in the lake, so the commands work from any directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

import click

from kbflow._cliopts import _lake_option
from kbflow.config import BACKENDS, MODES
from kbflow.errors import KbflowError
from kbflow.retrieve.fusion import FUSIONS

_HELP_TYPES = (
    "docs (Markdown/text folder or file), repo (code repository), jsonl (BEIR-style records), "
    "pdf (PDF file or folder), web (saved .html pages), ticket (JSON issue exports)"
)


#: exit status when another process holds the lake's write lease (EX_TEMPFAIL: try again later)
EXIT_BUSY = 75


class _Failure(click.ClickException):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Group(click.Group):
    """Turns every KbflowError into a one-line ``Error: ...`` and exit status 1 (75: the lake is busy)."""

    def invoke(self, ctx: click.Context) -> Any:
        from kbflow.config import resolve_lake
        from kbflow.errors import LakeBusyError
        from kbflow.lake.storage import storage_errors

        try:  # a full disk or read-only lake: one line, not a traceback
            clicks = (click.ClickException, click.exceptions.Exit, click.Abort)
            with storage_errors(lambda: resolve_lake((ctx.obj or {}).get("lake")), passing=clicks):
                return super().invoke(ctx)
        except LakeBusyError as exc:
            raise _Failure(str(exc), EXIT_BUSY) from None
        except KbflowError as exc:
            raise _Failure(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--lake",
    envvar="KBFLOW_LAKE",
    default=None,
    metavar="URI",
    help="The lake: a folder or any Lance URI. Default: $KBFLOW_LAKE, else ./data/lake.",
)
@click.version_option(package_name="kbflow")
@click.pass_context
def main(ctx: click.Context, lake: str | None) -> None:
    """kbflow: turn a corpus into cited, versioned, searchable knowledge.

    \b
    Quick start:
      kbflow add docs/ --type docs --scope myproject
      kbflow add . --type repo --id self --scope myproject
      kbflow ingest
      kbflow search "where are ranks fused" -k 5
    """
    from kbflow.lake.malloc import limit_malloc_arenas

    limit_malloc_arenas()  # before Lance starts its threads: freed memory stays reusable (see kbflow.lake.malloc)
    ctx.ensure_object(dict).setdefault("lake", lake)


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


@main.command()
@_lake_option
@click.argument("path")
@click.option("--type", "source_type", required=True, help=f"Source type: {_HELP_TYPES}.")
@click.option("--id", "source_id", default=None, help="Source id (default: from the path's name).")
@click.option(
    "--scope",
    default="global",
    show_default=True,
    help="Scope path (acme, acme/payments): seen by searches in it or below it; 'global' sources by every search.",
)
@click.option("--title", default=None, help="A human title for the source.")
@click.option(
    "--max-file-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Size limit of one file in MiB, stored with the source. Defaults: repo 1, docs 4, web 16, ticket 64, "
    "pdf 256, jsonl none. Larger files are left out and reported.",
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
@click.option("--depth", type=click.IntRange(0, 50), default=None, help="--crawl: links followed from the URL [3].")
@click.option("--max-pages", type=click.IntRange(1, 100_000), default=None, help="--crawl: pages at most [500].")
@click.option(
    "--delay",
    type=click.FloatRange(0, 60),
    default=None,
    help="--crawl: seconds between requests [1, or the site's robots.txt Crawl-delay when longer].",
)
@click.option(
    "--refresh",
    default=None,
    metavar="CRON",
    help="Refresh this source on a schedule, e.g. '0 */6 * * *': a Dagster schedule of its own ('none' removes it).",
)
@click.pass_context
def add(
    ctx: click.Context,
    path: str,
    source_type: str,
    source_id: str | None,
    scope: str,
    title: str | None,
    max_file_mb: float | None,
    all_pages: bool | None,
    crawl: bool | None,
    depth: int | None,
    max_pages: int | None,
    delay: float | None,
    refresh: str | None,
) -> None:
    """Register PATH as a source (nothing is loaded until `kbflow ingest`).

    PATH is a file or folder, or for --type web an http(s):// URL (fetched at
    ingest behind a guard that refuses private, loopback and link-local
    addresses; the bytes fetched are kept in the lake).
    """
    from kbflow.lake import Lake
    from kbflow.records import Source
    from kbflow.sources.base import MAX_FILE_MB_OPTION, REFRESH_OPTION, check_cron, get_loader, slugify
    from kbflow.sources.web import is_url

    loader = get_loader(source_type)
    uri = path if is_url(path) else os.path.abspath(os.path.expanduser(path))
    lake = Lake(_settings(ctx).lake)
    sid = source_id or slugify(uri)
    known = {s.source_id: s for s in lake.sources()} if lake.has_table("sources") else {}
    options = dict(known[sid].options or {}) if sid in known else {}  # re-adding keeps what it does not change
    if max_file_mb is not None:
        options[MAX_FILE_MB_OPTION] = max_file_mb
    if all_pages is not None:
        if source_type != "web":
            raise click.UsageError("--all-pages is for --type web sources")
        from kbflow.sources.web.conventions import ALL_PAGES_OPTION

        options[ALL_PAGES_OPTION] = all_pages
    _crawl_options(options, source_type, uri, crawl, {"depth": depth, "max_pages": max_pages, "delay": delay})
    if refresh is not None:
        if refresh.strip().lower() == "none":
            options.pop(REFRESH_OPTION, None)
        else:
            options[REFRESH_OPTION] = check_cron(refresh)
    loader.check(uri, options)
    source = lake.register(Source(sid, source_type, uri, scope=scope, title=title, options=options))
    click.echo(f"registered {source.source_id} ({source.source_type}, scope {source.scope}): {source.uri}")
    if options.get(REFRESH_OPTION):
        click.echo(
            f"  refreshed on the schedule '{options[REFRESH_OPTION]}' by Dagster (schedule refresh_{source.source_id};"
            " reload the code location of a running `dagster dev` to pick it up)"
        )
    for issue in loader.issues[:10]:
        click.echo(f"  will be left out: {issue}")
    if len(loader.issues) > 10:
        click.echo(f"  ... and {len(loader.issues) - 10} more (see `kbflow status --json` after ingest)")
    click.echo(f"lake: {lake.uri}; run `kbflow ingest` to load it")


def hit_places(hit: Any) -> str:
    """The other places of a hit's text, each by its label (and its source where that is another)."""
    return "; ".join(
        c.render() + (f" [{c.source_id}]" if c.source_id != hit.citation.source_id else "") for c in hit.also_in
    )


def _crawl_options(
    options: dict[str, Any], source_type: str, uri: str, crawl: bool | None, limits: dict[str, Any]
) -> None:
    """Set or clear the ``crawl`` option of a source being added (``--crawl``, ``--depth``, ...)."""
    from kbflow.sources.web import is_url
    from kbflow.sources.web.crawl import CRAWL_OPTION, CrawlSettings

    limits = {k: v for k, v in limits.items() if v is not None}
    if crawl is False:
        options.pop(CRAWL_OPTION, None)
    crawling = crawl or (crawl is None and bool(options.get(CRAWL_OPTION)))
    if not crawling:
        if limits:
            raise click.UsageError(f"{', '.join('--' + k.replace('_', '-') for k in limits)} go with --crawl")
        return
    if source_type != "web" or not is_url(uri):
        raise click.UsageError("--crawl is for --type web sources given as an http(s):// URL")
    current = options.get(CRAWL_OPTION)
    merged = {**(current if isinstance(current, dict) else {}), **limits}
    CrawlSettings.of(merged or True)  # checked now, not at ingest
    options[CRAWL_OPTION] = merged or True


@main.command()
@_lake_option
@click.argument("source_ids", nargs=-1)
@click.option("--model", default=None, help="Embedding model: a sentence-transformers path or id, or hash:DIM.")
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    envvar="KBFLOW_BACKEND",
    default=None,
    help="What runs the embedding model: onnx (default; torch's vectors, faster), torch, or onnx-int8 "
    "(faster still, its own vectors: the lake is re-embedded). Env: KBFLOW_BACKEND.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON summary object to stdout.")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bars on stderr (default: when stderr is a terminal)."
)
@click.option(
    "--runner",
    default="auto",
    show_default=True,
    help="dagster (the assets, in this process), local (the library steps, no orchestrator), "
    "or auto (dagster where installed).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Sources materialized side by side, each in a worker process of its own (the dagster runner).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray", "auto"]),
    default=None,
    help="Where loading, chunking and embedding run: local (this process), ray (the Ray cluster RAY_ADDRESS names, "
    "else one started here: a task per file, an embedding worker per node) or auto (ray for a source of 4 MiB or "
    "more). Env: KBFLOW_ENGINE. [default: local]",
)
@_wait_option
@click.pass_context
def ingest(
    ctx: click.Context,
    source_ids: tuple[str, ...],
    model: str | None,
    backend: str | None,
    as_json: bool,
    progress: bool | None,
    runner: str,
    workers: int,
    engine: str | None,
    wait: float,
) -> None:
    """Materialize the registered sources (or SOURCE_IDS) through the Dagster assets.

    Loads, chunks and embeds each changed source, then brings the search table
    and its indexes up to date and runs the asset checks. Exits 1 if a source
    failed or a check did not pass. Claims citing text the lake no longer holds
    are flagged and counted (`kbflow claims list --stale`); they do not fail the run.
    """
    from kbflow.pipeline import run_ingest

    settings = _settings(ctx, model=model, backend=backend, engine=engine)
    show = sys.stderr.isatty() if progress is None else progress
    summary = run_ingest(settings, list(source_ids) or None, runner=runner, progress=show, wait=wait, workers=workers)
    if as_json:
        click.echo(json.dumps(summary.to_dict()))
    else:
        for s in summary.sources:
            line = (
                f"{s.source_id:<24} {s.status:<9} +{s.chunks_added} -{s.chunks_removed} chunks, "
                f"{s.chunks_embedded} embedded"
            )
            click.echo(line + (f"  ERROR: {s.error}" if s.error else ""))
        for c in summary.checks:
            click.echo(f"check {c['name']}: {'passed' if c['passed'] else 'FAILED ' + json.dumps(c['metadata'])}")
        for table, n in summary.repaired.items():
            click.echo(f"repaired {table}: removed {n} rows whose key another row already held")
        if summary.claims and summary.claims.get("error"):
            click.echo(f"claims: could not check their evidence: {summary.claims['error']}", err=True)
        elif summary.claims:
            c = summary.claims
            if c["stale"]:
                click.echo(
                    f"claims: {len(c['stale'])} of {c['claims_checked']} cite text the lake no longer holds "
                    f"({len(c['newly_stale'])} new); review them with `kbflow claims list --stale`"
                )
            for cid, problems in c.get("unchecked", {}).items():
                click.echo(f"claims: could not check {cid}: {'; '.join(problems)}", err=True)
        for step, placed in summary.engine.get("steps", {}).items():
            click.echo(f"{step}: {placed['tasks']} Ray tasks on {len(placed['nodes'])} nodes")
        versions = ", ".join(f"{k} v{v}" for k, v in summary.versions.items())
        click.echo(f"versions: {versions}; {summary.seconds:.1f}s")
    if summary.index_error:
        click.echo(f"search index failed: {summary.index_error}", err=True)
    if not summary.ok:
        sys.exit(1)


@main.command()
@_lake_option
@click.argument("query")
@click.option("-k", "k", default=10, show_default=True, help="Number of hits (1-100).")
@click.option("--mode", type=click.Choice(MODES), default=None, help="Retrieval mode [default: hybrid].")
@click.option(
    "--fusion",
    type=click.Choice(list(FUSIONS)),
    default=None,
    help="Hybrid fusion: a convex combination of normalized scores or reciprocal rank fusion [default: convex].",
)
@click.option(
    "--rerank",
    "reranker",
    default=None,
    metavar="MODEL",
    help="Rerank the top fused candidates with this sentence-transformers cross-encoder (a local folder or model id).",
)
@click.option(
    "--rerank-depth", type=int, default=None, help="Fused candidates the cross-encoder rescores [default: max(50, k)]."
)
@click.option(
    "--scope", default=None, help="Scope path (acme/payments): its sources, its ancestors' (acme) and global ones."
)
@click.option("--kind", "kinds", multiple=True, help="Content kind filter (doc, code, record, ...); repeatable.")
@click.option(
    "--source-type", "source_types", multiple=True, help="Source type filter (docs, repo, jsonl, ...); repeatable."
)
@click.option("--source", "source_ids", multiple=True, help="Source id filter; repeatable.")
@click.option(
    "--min-score",
    type=click.FloatRange(0, 1),
    default=None,
    help="Drop hits whose relevance (0-1, calibrated for the model) is below this.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit, one per line.")
@click.option(
    "--prompt",
    "as_prompt",
    is_flag=True,
    help="For agents: each hit's full text as an untrusted block, delimited by a random boundary named in a "
    "preamble (Hits.as_prompt).",
)
@click.option("--version", "version", type=int, default=None, help="Search this version of the search table.")
@click.option("--tag", default=None, help="Search the lake snapshot made by `kbflow tag NAME`.")
@click.option("--no-log", "no_log", is_flag=True, help="Do not add this search to the lake's query log.")
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    envvar="KBFLOW_BACKEND",
    default=None,
    help="What embeds the query (a lake of onnx-int8 vectors is always queried with onnx-int8). Env: KBFLOW_BACKEND.",
)
@click.pass_context
def search(
    ctx,
    query,
    k,
    mode,
    fusion,
    reranker,
    rerank_depth,
    scope,
    kinds,
    source_types,
    source_ids,
    min_score,
    as_json,
    as_prompt,
    version,
    tag,
    no_log,
    backend,
) -> None:
    """Search the lake; every hit carries its citation.

    \b
    Each hit shows its score (the order of this list), its relevance (how
    likely a real match, 0-1, calibrated for the model; "-" where unknown)
    and its citation. When even the best hit is a weak match, a line says
    so: the lake likely holds no answer. A query made only of code names
    (Logger.callHandlers, json.dumps) lists their definitions first.
    """
    from kbflow.retrieve.retriever import Retriever

    settings = _settings(ctx, backend=backend)
    if no_log:
        settings = dataclasses.replace(settings, retrieval=settings.retrieval.override(log_queries=False))
    retriever = Retriever.open(settings.lake, version=version, tag=tag, settings=settings, origin="cli")
    hits = retriever.search(
        query,
        k=k,
        mode=mode,
        fusion=fusion,
        reranker=reranker,
        rerank_depth=rerank_depth,
        scope=scope,
        kinds=list(kinds) or None,
        source_types=list(source_types) or None,
        source_ids=list(source_ids) or None,
        min_score=min_score,
    )
    from kbflow import usage

    # the search's log row is written now, by the command, not by an exit hook while the interpreter and
    # Lance's runtime shut down (a failing write there, on a read-only lake, could crash the process)
    usage.flush(retriever.lake)
    if as_json:
        for hit in hits:
            click.echo(json.dumps(hit.to_dict()))
        return
    if as_prompt:
        click.echo(hits.as_prompt())
        return
    if hits.low_confidence:
        click.echo(f"no good match (confidence {hits.confidence:.2f}): the lake likely holds no answer")
    if not hits:
        click.echo("no hits")
    for hit in hits:
        relevance = "   -" if hit.relevance is None else f"{hit.relevance:.2f}"
        click.echo(f"{hit.rank:>2}. {hit.score:.4f} {relevance}  {hit.citation.render()}  [{hit.citation.source_id}]")
        snippet = " ".join(hit.text.split())
        click.echo(f"    {snippet[:160]}{'…' if len(snippet) > 160 else ''}")
        if hit.also_in:
            click.echo(f"    also in: {hit_places(hit)}")


@main.command()
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
    from kbflow.pipeline.results import split_issues

    lake = Lake(_settings(ctx).lake, create=False)
    if stale:
        from kbflow.pipeline import stale_sources

        found = stale_sources(lake)
        if as_json:
            click.echo(json.dumps({"lake": lake.uri, "stale": [s.__dict__ for s in found]}))
        else:
            for s in found:
                click.echo(f"{s.source_id:<24} {s.reason}" + (f"  ({s.detail})" if s.detail else ""))
            if not found:
                click.echo("every source is up to date")
        if found:
            sys.exit(3)
        return
    sources = lake.sources()
    versions = lake.versions()
    if as_json:
        rows = []
        for s in sources:
            row = s.to_row()
            row["options"] = dict(s.options)
            del row["issues"]
            row["skipped"], row["failed_files"] = split_issues(s.issues)
            for key in ("last_indexed", "added_at"):
                row[key] = row[key].isoformat() if row[key] else None
            rows.append(row)
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
        click.echo(f"  {'':<24} {s.uri}")
        if s.issues:
            counts = [f"{len(s.skipped)} files left out"] if s.skipped else []
            counts += [f"{len(s.failed_files)} could not be read"] if s.failed_files else []
            click.echo(f"  {'':<24} {', '.join(counts)} (`kbflow status --json` lists them)")
            for issue in s.failed_files[:3]:
                click.echo(f"  {'':<24}   unreadable: {issue['path']} ({issue['reason']})")
        if s.last_error:
            click.echo(f"  {'':<24} last error: {s.last_error}")
    click.echo("versions: " + (", ".join(f"{k} v{v}" for k, v in versions.items()) or "no tables yet"))


@main.command()
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


@main.command()
@_lake_option
@click.argument("name")
@_wait_option
@click.pass_context
def tag(ctx: click.Context, name: str, wait: float) -> None:
    """Tag the current version of every table NAME: one snapshot of the lake, readable until deleted."""
    from kbflow.lake import Lake

    tagged = Lake(_settings(ctx).lake, create=False).tag(name, wait=wait)
    click.echo(f"tagged {name}: " + ", ".join(f"{t} v{v}" for t, v in tagged.items()))


@main.command()
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


@main.command()
@_lake_option
@click.option("--keep", type=click.IntRange(min=1), default=None, help="Versions to keep per table (newest first).")
@click.option(
    "--older-than",
    "older_than",
    default=None,
    metavar="AGE",
    help="Only remove versions older than AGE (30m, 12h, 7d, 2w).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_wait_option
@click.pass_context
def gc(ctx: click.Context, keep: int | None, older_than: str | None, as_json: bool, wait: float) -> None:
    """Delete old table versions (tagged and latest versions always stay). Give --keep and/or --older-than."""
    from kbflow.lake import Lake

    if keep is None and older_than is None:
        raise click.UsageError("give --keep N and/or --older-than AGE")
    lake = Lake(_settings(ctx).lake, create=False)
    stats = lake.gc(keep=keep, older_than=_age(older_than) if older_than else None, wait=wait)
    if as_json:
        click.echo(json.dumps({"tables": stats}))
        return
    for name, st in stats.items():
        click.echo(f"{name}: {st['versions_removed']} versions removed, {st['bytes_removed']} bytes freed")


#: exit status of `kbflow resolve` when the source changed since the chunk was indexed
EXIT_STALE = 4


@main.command()
@_lake_option
@click.argument("chunk_id")
@click.option("--indexed", is_flag=True, help="Print the text as indexed, from the lake (no source is read).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: text, citation, and on a mismatch both texts.")
@click.pass_context
def resolve(ctx: click.Context, chunk_id: str, indexed: bool, as_json: bool) -> None:
    """Print exactly the source text CHUNK_ID's citation points at (re-read from the source).

    The text read is compared with the text indexed: if the source changed
    since, nothing is printed but the error, and the exit status is 4
    (re-ingest, or read the indexed text with --indexed).
    """
    from kbflow import schema as S
    from kbflow.errors import ResolveError, StaleCitationError
    from kbflow.lake import Lake
    from kbflow.records import Citation
    from kbflow.retrieve.resolver import resolve as resolve_citation

    lake = Lake(_settings(ctx).lake, create=False)
    columns = [S.SOURCE_ID, S.SOURCE_TYPE, S.URI, S.LOCATOR, S.TITLE, S.CONTENT_HASH, S.CHUNK_HASH, S.TEXT]
    rows = lake.scan(S.CHUNKS, columns, f"{S.CHUNK_ID} = {S.sql_str(chunk_id)}").to_pylist()
    if not rows:
        raise ResolveError(f"no chunk {chunk_id!r} in {lake.uri}")
    row = rows[0]
    citation = Citation.from_row(row)
    if indexed:
        text = row[S.TEXT]
    else:
        try:
            text = resolve_citation(citation, lake=lake)
        except StaleCitationError as exc:
            when = exc.indexed_at.strftime("%Y-%m-%d %H:%M:%S UTC") if exc.indexed_at else "an earlier ingest"
            message = (
                f"{exc}\nsource changed since it was indexed at {when}; re-ingest "
                f"(kbflow ingest {citation.source_id}), or read the indexed text with --indexed"
            )
            if as_json:
                out = {"chunk_id": chunk_id, "stale": True, "error": str(exc), "indexed_text": row[S.TEXT]}
                out.update(current_text=exc.current_text, citation=citation.to_dict())
                click.echo(json.dumps(out))
            click.echo(f"Error: {message}", err=True)
            sys.exit(EXIT_STALE)
    if as_json:
        click.echo(json.dumps({"chunk_id": chunk_id, "stale": False, "text": text, "citation": citation.to_dict()}))
        return
    sys.stdout.write(text)


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _service(ctx: click.Context, no_log: bool, source_roots: tuple[str, ...] = ()):
    from kbflow.service.core import Service

    return Service(_settings(ctx).lake, log_queries=not no_log, source_roots=source_roots or None)


@main.command()
@_lake_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (needs API keys off loopback).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--no-mcp", is_flag=True, help="Serve only the REST API (no MCP at /mcp).")
@click.option("--no-web", is_flag=True, help="No web page at / (the REST API and MCP only).")
@click.option("--no-log", "no_log", is_flag=True, help="Do not add searches to the lake's query log.")
@click.option(
    "--source-root",
    "source_roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder under which local sources may be added over HTTP (web page, REST); repeatable "
    "[default: the current directory].",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    envvar="KBFLOW_ALLOW_HOSTS",
    metavar="NAME[:PORT]",
    help="Another Host name the server answers to (it answers to 127.0.0.1, localhost and [::1] on its port); "
    "repeatable, or space-separated in $KBFLOW_ALLOW_HOSTS; '*' turns the check off (behind a proxy).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    envvar="KBFLOW_ALLOW_ORIGINS",
    metavar="URL",
    help="Another site allowed to write and to read with CORS (https://app.example.com); repeatable, "
    "or space-separated in $KBFLOW_ALLOW_ORIGINS.",
)
@click.pass_context
def serve(ctx, host, port, no_mcp, no_web, no_log, source_roots, allow_hosts, allow_origins) -> None:
    """Serve the lake: a web page at /, the REST API under /v1 (OpenAPI at /docs), MCP at /mcp.

    \b
    With API keys in the lake (`kbflow keys create`), every request needs one
    (Authorization: Bearer kbf_...; a browser signs in at /login). Without
    any, the server is local and trusted: it binds to 127.0.0.1 only.

    \b
    Other sites open in the same browser are kept out: the server answers only
    to its own Host names (421 otherwise), refuses writes whose Origin is not
    its own (403), takes JSON only on the API and a CSRF token on every form,
    and registers local folders over HTTP only under --source-root.
    """
    from kbflow.service.app import serve as run_server

    service = _service(ctx, no_log, source_roots)
    service.retriever()  # fail now, not on the first request, if the lake has no search table
    if not service.keys.enabled:
        if host not in _LOOPBACK:
            raise click.UsageError(
                f"no API keys in {service.lake.uri}: without keys kbflow serve binds to 127.0.0.1 only; "
                "create one with `kbflow keys create --scope SCOPE --role reader|editor`"
            )
        click.echo("no API keys in this lake: serving on the loopback address only, without authentication", err=True)
    parts = ("" if no_web else "web page /, ") + "REST /v1, OpenAPI /docs" + ("" if no_mcp else ", MCP /mcp")
    click.echo(f"serving {service.lake.uri} at http://{host}:{port} ({parts})", err=True)
    click.echo(
        "answering to Host "
        + ", ".join(_host_names(host, port, allow_hosts))
        + "; local sources over HTTP only under "
        + ", ".join(service.source_roots),
        err=True,
    )
    run_server(
        service, host, port, mcp=not no_mcp, web=not no_web, allow_hosts=allow_hosts, allow_origins=allow_origins
    )


def _host_names(host: str, port: int, allow_hosts: tuple[str, ...]) -> list[str]:
    from kbflow.service.security import Policy

    return [f"{name}:{port}" for name in Policy.of(host).own_names()] + list(allow_hosts)


@main.command()
@_lake_option
@click.option("--no-log", "no_log", is_flag=True, help="Do not add searches to the lake's query log.")
@click.pass_context
def mcp(ctx, no_log) -> None:
    """Serve the MCP tools over stdio, for desktop agents (knowledge_search, resolve_citation, list_sources).

    \b
    Configure your agent to run:  kbflow --lake /abs/path/to/lake mcp
    """
    from kbflow.service.mcp import run_stdio

    service = _service(ctx, no_log)
    service.retriever()
    run_stdio(service)


@main.command()
@_lake_option
@click.option("--since", default="7d", show_default=True, help="Window: 7d, 12h, 30m, an ISO date, or 'all'.")
@click.option("--top", type=click.IntRange(1, 1000), default=20, show_default=True, help="Rows per table.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def insights(ctx, since, top, as_json) -> None:
    """What was asked and cited: top queries, content gaps (no hit or no good match), most and never
    cited sources, searches per origin with latency."""
    from kbflow.analytics import insights as report
    from kbflow.lake import Lake

    out = report(Lake(_settings(ctx).lake, create=False), None if since == "all" else since, top=top)
    if as_json:
        click.echo(json.dumps(out.to_dict(), default=str))
        return
    click.echo(out.to_markdown())


@main.group()
def keys() -> None:
    """API keys for `kbflow serve`: a scope and a role (reader or editor) each, stored hashed in the lake."""


@keys.command("create")
@_lake_option
@click.option(
    "--scope", required=True, help="The scope path the key reaches (and everything under it); 'global' for all."
)
@click.option("--role", type=click.Choice(["reader", "editor"]), default="reader", show_default=True)
@click.option("--name", default=None, help="A label, e.g. who holds the key.")
@click.pass_context
def keys_create(ctx, scope, role, name) -> None:
    """Create a key; it is printed once (only its hash is stored)."""
    from kbflow.keys import create_key
    from kbflow.lake import Lake

    key, token = create_key(Lake(_settings(ctx).lake), scope, role, name=name)
    click.echo(token)
    click.echo(f"key {key.key_id}: {key.role} of scope {key.scope}; store it now, it is not shown again", err=True)


@keys.command("list")
@_lake_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@click.pass_context
def keys_list(ctx, as_json) -> None:
    """List keys (never their secrets)."""
    from kbflow.keys import list_keys
    from kbflow.lake import Lake

    for key in list_keys(Lake(_settings(ctx).lake, create=False)):
        if as_json:
            click.echo(json.dumps(key.to_dict()))
        else:
            state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
            click.echo(f"{key.key_id}  {key.role:<6}  {key.scope}  {state}  {key.name or ''}".rstrip())


@keys.command("revoke")
@_lake_option
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx, key_id) -> None:
    """Revoke KEY_ID (a running server stops accepting it within seconds)."""
    from kbflow.keys import revoke_key
    from kbflow.lake import Lake

    key = revoke_key(Lake(_settings(ctx).lake, create=False), key_id)
    click.echo(f"revoked {key.key_id} ({key.role} of scope {key.scope})")


def _add_groups() -> None:
    from kbflow.claims.cli import claims_command
    from kbflow.evaluate.cli import eval_command

    main.add_command(eval_command)
    main.add_command(claims_command)


_add_groups()

if __name__ == "__main__":  # pragma: no cover
    main()
