"""What a team asks and what its agents cite: the insights report over the query and citation logs.

:func:`insights` reads the lake's ``query_log`` and ``citation_log``
(:mod:`kbflow.usage`) over a time window and returns polars frames:

- ``top_queries``: the most frequent queries (case and spacing folded), with
  how often, mean hits and mean confidence;
- ``content_gaps``: queries that found nothing, or whose best hit was a weak
  match (confidence below 0.5, :attr:`kbflow.records.Hits.low_confidence`):
  what the corpus does not answer;
- ``cited_sources`` / ``cited_chunks``: what was put in front of a model,
  most first;
- ``never_cited``: registered sources with no citation in the window;
- ``by_origin``: searches per surface (python, notebook, cli, rest, mcp),
  with latency p50/p95.

``kbflow insights``, ``GET /v1/insights`` and the Dagster asset ``insights``
print, serve and materialize the same report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kbflow import schema as S
from kbflow import usage
from kbflow._lazy import require
from kbflow.config import DEFAULT_LOG_DAYS, env_int
from kbflow.lake.lake import Lake
from kbflow.records import LOW_CONFIDENCE

__all__ = ["Insights", "insights"]

_FRAMES = ("top_queries", "content_gaps", "cited_sources", "cited_chunks", "never_cited", "by_origin")


@dataclass
class Insights:
    """The insights report: counts and polars frames over ``[since, until]``."""

    since: datetime | None
    until: datetime
    #: when the oldest row still in the logs was logged (``None``: the logs are empty)
    oldest: datetime | None
    #: days the logs keep a row (0: every row): the window reaches back no further than that
    log_days: int
    queries: int
    citations: int
    top_queries: Any
    content_gaps: Any
    cited_sources: Any
    cited_chunks: Any
    never_cited: Any
    by_origin: Any

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``kbflow insights --json``, ``GET /v1/insights``)."""
        out: dict[str, Any] = {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat(),
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "log_days": self.log_days,
            "queries": self.queries,
            "citations": self.citations,
        }
        for name in _FRAMES:
            out[name] = getattr(self, name).to_dicts()
        return out

    def window(self) -> str:
        """The span the report covers, in words: the window asked for, bounded by what the logs still keep."""
        asked = f"since {self.since:%Y-%m-%d %H:%M} UTC" if self.since else "all time"
        kept = f"the logs keep {self.log_days} days" if self.log_days else "the logs keep every row"
        oldest = f", the oldest row from {self.oldest:%Y-%m-%d %H:%M} UTC" if self.oldest else ", no row logged yet"
        return f"{asked}; {kept}{oldest}"

    def to_markdown(self) -> str:
        """The report as Markdown tables (the Dagster asset's metadata, ``kbflow insights``)."""
        parts = [f"**{self.queries} searches, {self.citations} citations** ({self.window()})"]
        titles = {
            "top_queries": "Top queries",
            "content_gaps": "Content gaps (no hit, or no good match)",
            "cited_sources": "Most cited sources",
            "cited_chunks": "Most cited chunks",
            "never_cited": "Sources never cited",
            "by_origin": "Searches by origin",
        }
        for name, title in titles.items():
            parts.append(f"### {title}\n\n{_markdown(getattr(self, name))}")
        return "\n\n".join(parts)


def _markdown(frame) -> str:
    if frame.height == 0:
        return "(none)"

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3g}"
        return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + " --- |" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join(lines)


def insights(
    lake: str | Lake, since: str | timedelta | datetime | None = "7d", *, top: int = 20, log_days: int | None = None
) -> Insights:
    """The insights report of ``lake`` over the window from ``since`` (``"7d"``, ``"12h"``, a datetime, or
    ``None`` for everything) to now; each frame lists at most ``top`` rows (``never_cited`` all). ``log_days``:
    the logs' retention the report states (default: ``$KBFLOW_LOG_DAYS``, else 90)."""
    pl = require("polars")
    lake = lake if isinstance(lake, Lake) else Lake(lake, create=False)
    usage.flush(lake)  # what this process has buffered counts too
    start = usage.parse_since(since)
    queries = usage.read_log(lake, S.QUERY_LOG, start)
    cites = usage.read_log(lake, S.CITATION_LOG, start)
    folded = pl.col(S.QUERY).str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
    q = queries.with_columns(folded.alias("folded"))

    top_queries, content_gaps = _query_frames(q, top)
    cited_sources, cited_chunks = _citation_frames(cites, top)
    return Insights(
        since=start,
        until=usage.now(),
        oldest=usage.oldest(lake, S.QUERY_LOG),
        log_days=log_days if log_days is not None else env_int("KBFLOW_LOG_DAYS", DEFAULT_LOG_DAYS),
        queries=queries.height,
        citations=cites.height,
        top_queries=top_queries,
        content_gaps=content_gaps,
        cited_sources=cited_sources,
        cited_chunks=cited_chunks,
        never_cited=_never_cited(lake, cites),
        by_origin=_by_origin(queries),
    )


def _query_frames(q: Any, top: int) -> tuple[Any, Any]:
    """The most asked queries, and the content gaps (no hit or no good match), each folded query once."""
    pl = require("polars")
    top_queries = (
        q.group_by("folded")
        .agg(
            pl.col(S.QUERY).first().alias("query"),
            pl.len().alias("count"),
            pl.col(S.RESULTS).mean().alias("mean_hits"),
            pl.col(S.CONFIDENCE).mean().alias("mean_confidence"),
            pl.col(S.LOGGED_AT).max().alias("last_asked"),
        )
        .sort(["count", "last_asked"], descending=True)
        .drop("folded")
        .head(top)
    )
    weak = (pl.col(S.RESULTS) == 0) | (pl.col(S.CONFIDENCE) < LOW_CONFIDENCE)
    content_gaps = (
        q.filter(weak)
        .group_by("folded")
        .agg(
            pl.col(S.QUERY).first().alias("query"),
            pl.len().alias("count"),
            (pl.col(S.RESULTS) == 0).sum().alias("no_hits"),
            pl.col(S.CONFIDENCE).max().alias("best_confidence"),
            pl.col(S.LOGGED_AT).max().alias("last_asked"),
        )
        .with_columns(
            pl.when(pl.col("no_hits") > 0).then(pl.lit("no hits")).otherwise(pl.lit("no good match")).alias("reason")
        )
        .sort(["count", "last_asked"], descending=True)
        .drop("folded", "no_hits")
        .head(top)
    )
    return top_queries, content_gaps


def _citation_frames(cites: Any, top: int) -> tuple[Any, Any]:
    """The most cited sources and chunks."""
    pl = require("polars")
    cited_sources = (
        cites.group_by(S.SOURCE_ID)
        .agg(pl.len().alias("citations"), pl.col(S.CHUNK_ID).n_unique().alias("chunks"))
        .sort(["citations", S.SOURCE_ID], descending=[True, False])
        .head(top)
    )
    cited_chunks = (
        cites.group_by(S.CHUNK_ID)
        .agg(
            pl.col(S.SOURCE_ID).first(),
            pl.len().alias("citations"),
            pl.col(S.CITATION).last().alias(S.CITATION),
            pl.col(S.TEXT).last().str.slice(0, 120).alias("text"),
        )
        .sort(["citations", S.CHUNK_ID], descending=[True, False])
        .head(top)
    )
    return cited_sources, cited_chunks


def _never_cited(lake: Lake, cites: Any) -> Any:
    """The registered sources no citation names."""
    pl = require("polars")
    cited_ids = set(cites[S.SOURCE_ID].to_list())
    registered = lake.sources() if lake.has_table(S.SOURCES) else []
    never_cited = pl.DataFrame(
        [
            {"source_id": s.source_id, "scope": s.scope, "source_type": s.source_type, "chunks": s.chunk_count}
            for s in registered
            if s.source_id not in cited_ids
        ],
        schema={"source_id": pl.String, "scope": pl.String, "source_type": pl.String, "chunks": pl.Int64},
    )
    return never_cited


def _by_origin(queries: Any) -> Any:
    """Searches per surface: count, latency p50/p95, searches without a hit."""
    pl = require("polars")
    by_origin = (
        queries.group_by(S.ORIGIN)
        .agg(
            pl.len().alias("queries"),
            pl.col(S.LATENCY_MS).quantile(0.5, "nearest").alias("p50_ms"),
            pl.col(S.LATENCY_MS).quantile(0.95, "nearest").alias("p95_ms"),
            (pl.col(S.RESULTS) == 0).sum().alias("no_hits"),
        )
        .sort(S.ORIGIN)
    )
    return by_origin
