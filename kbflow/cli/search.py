"""``kbflow search`` and ``kbflow resolve``: cited hits, and a citation back to its text."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import click

from kbflow.cli.options import _lake_option, _settings, for_terminal
from kbflow.config import BACKENDS, MODES
from kbflow.lake.sql import sql_str
from kbflow.retrieve.fusion import FUSIONS
from kbflow.retrieve.roles import describe


def hit_places(hit: Any) -> str:
    """The other places of a hit's text, each by its label (and its source where that is another)."""
    return "; ".join(
        c.render() + (f" [{c.source_id}]" if c.source_id != hit.citation.source_id else "") for c in hit.also_in
    )


@click.command()
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
@click.option(
    "--glossary",
    default=None,
    metavar="NAME|FILE",
    help="Query expansion: 'finance' (built in), a file of 'terms<TAB>expansion' lines, or 'none' [default: finance].",
)
@click.option(
    "--feedback",
    type=click.FloatRange(0, 10),
    default=None,
    metavar="W",
    help="Feedback on prose records: where the first hits all come from record sets of prose, the query moves "
    "toward them by W times their mean and the rest is ranked again behind the first hit (0: off) [default: 0.5].",
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
    help="What embeds the query (every backend but torch embeds one on the ONNX export's onnxruntime session; a lake "
    "of onnx-int8 vectors is always queried with onnx-int8). Env: KBFLOW_BACKEND.",
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
    glossary,
    feedback,
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
    (Logger.callHandlers, json.dumps) lists their definitions first. A query
    naming a glossary term (operating margin, capex, PP&E) is searched with
    the words it stands for; a line says which. Over prose records
    (abstracts, articles), the query moves toward its first hits and the
    rest is ranked again (--feedback).
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
        glossary=glossary,
        feedback=feedback,
    )
    from kbflow import usage

    # the search's log row is written now, by the command, not by an exit hook while the interpreter and
    # Lance's runtime shut down (a failing write there, on a read-only lake, could crash the process)
    usage.flush(retriever.lake)
    _print_hits(hits, as_json, as_prompt)


def _print_hits(hits: Any, as_json: bool, as_prompt: bool) -> None:
    """What `kbflow search` prints: one JSON object per hit, the agents' prompt, or the lines a person reads (the
    glossary's words, the flag and why, then each hit's citation, text, role and other places)."""
    if as_json:
        flag = {"flag": hits.flag.to_dict()} if hits.flag is not None else {}  # why the list is flagged, or not
        for hit in hits:
            click.echo(json.dumps({**hit.to_dict(), **flag}))
        return
    if as_prompt:
        prompt = hits.as_prompt()
        click.echo(for_terminal(prompt) if sys.stdout.isatty() else prompt)
        return
    if hits.expansion:
        click.echo(f"searched with the glossary's words: {hits.expansion}")
    if hits.low_confidence:
        why = f" ({hits.flag.sentence()})" if hits.flag is not None else ""
        click.echo(f"no good match: the lake likely holds no answer{why}")
    if not hits:
        click.echo("no hits")
    for hit in hits:
        relevance = "   -" if hit.relevance is None else f"{hit.relevance:.2f}"
        line = f"{hit.rank:>2}. {hit.score:.4f} {relevance}  {hit.citation.render()}  [{hit.citation.source_id}]"
        click.echo(for_terminal(line))
        snippet = " ".join(hit.text.split())
        click.echo(for_terminal(f"    {snippet[:160]}{'…' if len(snippet) > 160 else ''}"))
        if hit.role:
            click.echo(f"    ({describe(hit.role)})")
        if hit.also_in:
            click.echo(for_terminal(f"    also in: {hit_places(hit)}"))


#: exit status of `kbflow resolve` when the source changed since the chunk was indexed
EXIT_STALE = 4


@click.command()
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
    rows = lake.scan(S.CHUNKS, columns, f"{S.CHUNK_ID} = {sql_str(chunk_id)}").to_pylist()
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
    sys.stdout.write(for_terminal(text) if sys.stdout.isatty() else text)  # exactly the text, unless shown
