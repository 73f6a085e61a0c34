"""``kbflow ingest``: load, chunk, embed and index what changed, through Dagster where it is installed."""

from __future__ import annotations

import json
import sys

import click

from kbflow.cli.options import _lake_option, _settings, _wait_option, for_terminal
from kbflow.config import BACKENDS


@click.command()
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
    and its indexes up to date and runs the asset checks. On a lake with no
    source registered it says so, and how to add one. Exits 1 if a source
    failed or a check did not pass. Claims citing text the lake no longer holds
    are flagged and counted (`kbflow claims list --stale`); they do not fail the run.
    """
    from kbflow.pipeline import run_ingest

    settings = _settings(ctx, model=model, backend=backend, engine=engine)
    if not source_ids and not _registered(settings.lake):
        message = (
            f"nothing is registered in {settings.lake}: add a source first, e.g. "
            "`kbflow add docs/ --type docs` (see `kbflow add --help`), then run `kbflow ingest`"
        )
        click.echo(json.dumps({"sources": [], "message": message}) if as_json else message, err=not as_json)
        return
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


def _registered(lake_uri: str) -> bool:
    """Whether the lake exists and has a registered source."""
    from kbflow.errors import LakeNotFoundError
    from kbflow.lake import Lake

    try:
        lake = Lake(lake_uri, create=False)
    except LakeNotFoundError:
        return False
    return lake.has_table("sources") and bool(lake.sources())
