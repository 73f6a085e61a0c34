"""The ``kbflow`` command: register sources, ingest them through Dagster, search with citations.

Every command takes ``--lake URI`` (default ``$KBFLOW_LAKE`` or ``./data/lake``);
the source registry lives in the lake, so the commands work from any directory.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kbflow._cliopts import _lake_option
from kbflow.commands.common import _settings, _wait_option, for_terminal
from kbflow.config import BACKENDS
from kbflow.errors import KbflowError

_HELP_TYPES = (
    "docs (Markdown/text/notebook folder or file), repo (code repository), jsonl (BEIR-style records), "
    "pdf (PDF file or folder), web (saved .html pages), ticket (JSON issue exports)"
)


#: exit status when another process holds the lake's write lease (EX_TEMPFAIL: try again later)
EXIT_BUSY = 75


class _Failure(click.ClickException):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class; each failure has its own


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


@main.command()
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


@main.command()
@_lake_option
@click.argument("source_ids", nargs=-1)
@click.option("--model", default=None, help="Embedding model: a sentence-transformers path or id, or hash:DIM.")
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    envvar="KBFLOW_BACKEND",
    default=None,
    help="What runs the embedding model: auto (default: bf16 where this CPU multiplies bfloat16 fast, else onnx), "
    "onnx (the exported graph in fp32: torch's vectors), bf16 (PyTorch in bfloat16: vectors within 0.99998 cosine, "
    "stored as the same model's), torch, or onnx-int8 (its own vectors: the lake is re-embedded). "
    "Env: KBFLOW_BACKEND.",
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
            click.echo(for_terminal(line + (f"  ERROR: {s.error}" if s.error else "")))
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
            tasks, nodes = placed["tasks"], len(placed["nodes"])
            click.echo(f"{step}: {tasks} Ray task{'s' * (tasks != 1)} on {nodes} node{'s' * (nodes != 1)}")
        versions = ", ".join(f"{k} v{v}" for k, v in summary.versions.items())
        click.echo(f"versions: {versions}; {summary.seconds:.1f}s")
    if summary.index_error:
        click.echo(f"search index failed: {summary.index_error}", err=True)
    if not summary.ok:
        sys.exit(1)


def _add_groups() -> None:
    from kbflow.claims.cli import claims_command
    from kbflow.commands import lake, search, serve
    from kbflow.evaluate.cli import eval_command

    for command in (
        search.search,
        search.resolve,
        lake.status,
        lake.remove,
        lake.rename,
        lake.tag,
        lake.versions,
        lake.gc,
        serve.serve,
        serve.mcp,
        serve.insights,
        serve.keys,
        eval_command,
        claims_command,
    ):
        main.add_command(command)


_add_groups()

if __name__ == "__main__":  # pragma: no cover
    main()
