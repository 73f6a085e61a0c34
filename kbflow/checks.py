"""Data-quality checks on the lake; Dagster runs them as asset checks, ``kbflow ingest`` too.

Each check returns a :class:`CheckResult`; none raises on a failed check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbflow import schema as S
from kbflow.embed.base import model_id_of
from kbflow.errors import KbflowError
from kbflow.index.search import FTS_INDEX, VECTOR_INDEX, VECTOR_INDEX_MIN_ROWS, index_coverage
from kbflow.lake.lake import Lake
from kbflow.records import Citation
from kbflow.retrieve.resolver import resolve

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
    hashes = set(lake.scan(S.CHUNKS, [S.CHUNK_HASH]).column(0).to_pylist())
    have = set(lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH], f"{S.MODEL_ID} = {S.sql_str(model_id)}").column(0).to_pylist())
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
    if rows and FTS_INDEX not in coverage:
        problems.append("no full-text index")
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
    """A deterministic sample of chunks resolves back to exactly its text."""
    rows = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.SOURCE_ID, S.SOURCE_TYPE, S.URI, S.TEXT, S.LOCATOR]).to_pylist()
    rows.sort(key=lambda r: r[S.CHUNK_ID])  # ids are hashes: a spread-out, stable sample
    step = max(1, len(rows) // sample) if rows else 1
    picked = rows[::step][:sample]
    failures = []
    for row in picked:
        citation = Citation.from_row(row)
        try:
            ok = resolve(citation) == row[S.TEXT]
            reason = "text differs"
        except KbflowError as exc:
            ok, reason = False, str(exc)
        if not ok:
            failures.append(f"{row[S.CHUNK_ID]}: {reason}")
    return CheckResult(
        "locators_resolve",
        not failures,
        "sampled chunk locators resolve back to the chunk text",
        {"sampled": len(picked), "failed": len(failures), "failures": "; ".join(failures[:5]) or "none"},
    )


def run_checks(lake: Lake, model: str) -> list[CheckResult]:
    return [
        check_embeddings(lake, model),
        check_search_matches_chunks(lake),
        check_index_coverage(lake),
        check_locators(lake),
    ]
