"""Data-quality checks on the lake; Dagster runs them as asset checks, ``kbflow ingest`` too.

Each check returns a :class:`CheckResult`; none raises on a failed check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbflow import schema as S
from kbflow.embed.base import model_id_of
from kbflow.index.search import FTS_INDEX, NAMES_INDEX, VECTOR_INDEX, VECTOR_INDEX_MIN_ROWS, index_coverage
from kbflow.lake.lake import Lake
from kbflow.lake.sql import sql_in, sql_str
from kbflow.records import Citation

__all__ = ["CheckResult", "run_checks"]


@dataclass
class CheckResult:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def check_embeddings(lake: Lake, model: str) -> CheckResult:
    """Every chunk has a vector for the active model."""
    model_id = model_id_of(model)
    from kbflow.chunk.context import embed_keys

    hashes = set(embed_keys(lake.scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH])).to_pylist())
    have = set(lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH], f"{S.MODEL_ID} = {sql_str(model_id)}").column(0).to_pylist())
    missing = hashes - have
    return CheckResult(
        "embeddings_cover_chunks",
        not missing,
        f"every chunk text has a {model_id} vector",
        {"chunk_texts": len(hashes), "missing": len(missing), "model_id": model_id},
    )


def check_search_matches_chunks(lake: Lake) -> CheckResult:
    """The search table holds exactly the current chunk rows."""
    want = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.ROW_HASH]).to_pylist()
    have = lake.scan(S.SEARCH, [S.CHUNK_ID, S.ROW_HASH]).to_pylist() if lake.has_table(S.SEARCH) else []
    want_set = {(r[S.CHUNK_ID], r[S.ROW_HASH]) for r in want}
    have_set = {(r[S.CHUNK_ID], r[S.ROW_HASH]) for r in have}
    return CheckResult(
        "search_matches_chunks",
        want_set == have_set and len(have) == len(have_set),
        "the search table holds exactly the current chunks",
        {
            "chunks": len(want_set),
            "search_rows": len(have),
            "missing_from_search": len(want_set - have_set),
            "extra_in_search": len(have_set - want_set),
        },
    )


def check_index_coverage(lake: Lake) -> CheckResult:
    """Every index covers every row (no row left to the slower unindexed scan)."""
    if not lake.has_table(S.SEARCH):
        return CheckResult(
            "indexes_cover_rows", False, "the search table exists and is fully indexed", {"error": "no search table"}
        )
    table = lake.table(S.SEARCH)
    rows = table.count_rows()
    coverage = index_coverage(table)
    problems = [f"{name}: {v['unindexed']} rows unindexed" for name, v in coverage.items() if v["unindexed"]]
    problems += [f"no full-text index {name}" for name in (FTS_INDEX, NAMES_INDEX) if rows and name not in coverage]
    if rows >= VECTOR_INDEX_MIN_ROWS and VECTOR_INDEX not in coverage:
        problems.append(f"no vector index at {rows} rows")
    return CheckResult(
        "indexes_cover_rows",
        not problems,
        "every index of the search table covers every row",
        {
            "rows": rows,
            "problems": "; ".join(problems) or "none",
            **{f"{k}_unindexed": v["unindexed"] for k, v in coverage.items()},
        },
    )


def check_locators(lake: Lake, sample: int = 50) -> CheckResult:
    """A deterministic sample of chunks resolves back to exactly its text.

    The sample is spread over the chunk ids (hashes, so spread over sources
    and files). Citations are resolved grouped by file, with the lake's page
    layouts, so no document is parsed twice. A chunk whose source changed
    since it was indexed is counted as ``stale``, not as a failure of the
    resolver: the next ingest re-indexes it.
    """
    from kbflow.errors import StaleCitationError
    from kbflow.retrieve.resolver import resolve_many

    ids = lake.scan(S.CHUNKS, [S.CHUNK_ID]) if lake.has_table(S.CHUNKS) else None
    if ids is None or not ids.num_rows:
        return CheckResult(
            "locators_resolve",
            True,
            "sampled chunk locators resolve back to the chunk text",
            {"sampled": 0, "failed": 0, "stale": 0, "failures": "none", "stale_chunks": "none"},
        )
    chosen = sorted(ids.column(0).to_pylist())  # ids are hashes: a spread-out, stable sample
    step = max(1, len(chosen) // sample)
    chosen = chosen[::step][:sample]
    columns = [S.CHUNK_ID, S.SOURCE_ID, S.SOURCE_TYPE, S.URI, S.TEXT, S.LOCATOR, S.CONTENT_HASH, S.CHUNK_HASH]
    rows = lake.scan(S.CHUNKS, columns, sql_in(S.CHUNK_ID, chosen)).to_pylist()
    results = resolve_many([Citation.from_row(row) for row in rows], lake=lake)
    failures, stale = [], []
    for row, got in zip(rows, results):
        if isinstance(got, StaleCitationError):
            stale.append(f"{row[S.CHUNK_ID]}: {got}")
        elif isinstance(got, Exception):
            failures.append(f"{row[S.CHUNK_ID]}: {got}")
        elif got != row[S.TEXT]:
            failures.append(f"{row[S.CHUNK_ID]}: text differs")
    return CheckResult(
        "locators_resolve",
        not failures,
        "sampled chunk locators resolve back to the chunk text (stale: the source changed since it was indexed)",
        {
            "sampled": len(rows),
            "failed": len(failures),
            "stale": len(stale),
            "failures": "; ".join(failures[:5]) or "none",
            "stale_chunks": "; ".join(stale[:5]) or "none",
        },
    )


def check_keys_unique(lake: Lake) -> CheckResult:
    """No two rows of any table share its key (:data:`kbflow.schema.KEYS`)."""
    from kbflow.lake.repair import find_duplicates

    found = find_duplicates(lake)
    return CheckResult(
        "keys_unique",
        not any(found.values()),
        "no two rows of any table share a key (the next ingest removes duplicates)",
        {f"{name}_duplicates": n for name, n in found.items()},
    )


def run_checks(lake: Lake, model: str) -> list[CheckResult]:
    return [
        check_embeddings(lake, model),
        check_search_matches_chunks(lake),
        check_index_coverage(lake),
        check_locators(lake),
        check_keys_unique(lake),
    ]
