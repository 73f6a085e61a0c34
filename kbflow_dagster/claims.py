"""The ``claims_evidence`` asset: after each search index, flag claims whose cited text the lake no longer holds."""

# no `from __future__ import annotations`: Dagster inspects the context type hints at runtime

import dagster as dg

from kbflow import pipeline
from kbflow import schema as S
from kbflow_dagster.corpus import RESULT, _step, search_index
from kbflow_dagster.resources import KbflowResource


def _clip(text, width: int = 80) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def check_claims_in_detail(lake, settings) -> dict | None:
    """:func:`kbflow.pipeline.check_claims` with each stale claim's text and findings (one open of the store)."""
    return pipeline.check_claims(lake, settings, details=True)


@dg.asset(
    group_name="claims",
    deps=[search_index],
    automation_condition=dg.AutomationCondition.eager(),  # after every publish of the search index
    description="Every citation of every claim not superseded, checked against the lake: claims whose cited "
    "text is gone are flagged evidence_stale (old and new text kept) for a person to review; statuses stay.",
)
def claims_evidence(kbflow: KbflowResource) -> dg.MaterializeResult:
    lake = kbflow.open_lake()
    out = _step(check_claims_in_detail, lake, kbflow.settings()) or {
        "claims_checked": 0,
        "evidence_checked": 0,
        "stale": [],
        "newly_stale": [],
        "cleared": [],
        "unchecked": {},
        "details": [],
    }
    rows = [
        f"| {c['claim_id']} | {c['status']} | {_clip(c['text'])} | {_clip(s['old_text'])} | "
        f"{_clip(s['new_text']) or '(gone)'} |"
        for c in out["details"]
        for s in c["stale"]
    ]
    summary = (
        f"{len(out['stale'])} of {out['claims_checked']} claims cite text the lake no longer holds "
        f"({len(out['newly_stale'])} new, {len(out['cleared'])} cleared)."
    )
    unchecked = sum(len(problems) for problems in out["unchecked"].values())
    if unchecked:
        summary += f" {unchecked} citation(s) could not be checked: `kbflow claims check` names them."
    if rows:
        summary += "\n\n| claim | status | claim text | cited | now |\n| --- | --- | --- | --- | --- |\n" + "\n".join(
            rows
        )
    return dg.MaterializeResult(
        metadata={
            "claims_checked": out["claims_checked"],
            "citations_checked": out["evidence_checked"],
            "stale_claims": len(out["stale"]),
            "unchecked_citations": unchecked,
            "newly_stale": dg.MetadataValue.json(out["newly_stale"]),
            "cleared": dg.MetadataValue.json(out["cleared"]),
            "summary": dg.MetadataValue.md(summary),
            RESULT: dg.MetadataValue.json(out),
        }
    )


@dg.asset_check(
    asset=claims_evidence,
    description="No active claim (observed, inferred, verified) cites text the lake no longer holds.",
)
def claims_evidence_fresh(kbflow: KbflowResource) -> dg.AssetCheckResult:
    lake = kbflow.open_lake()
    stale = []
    if lake.has_table(S.CLAIMS):
        where = f"{S.EVIDENCE_STALE} AND {S.STATUS} IN ('observed', 'inferred', 'verified')"
        stale = lake.scan(S.CLAIMS, [S.CLAIM_ID], where).column(0).to_pylist()
    return dg.AssetCheckResult(
        passed=not stale,
        severity=dg.AssetCheckSeverity.WARN,
        description="claims to review: `kbflow claims list --stale`"
        if stale
        else "every active claim's evidence holds",
        metadata={"stale_active_claims": len(stale), "claim_ids": dg.MetadataValue.json(sorted(stale)[:100])},
    )


@dg.asset_check(
    asset=claims_evidence,
    description="No contradiction a person confirmed stands unresolved: of two claims confirmed to contradict, "
    "one is superseded or disputed.",
)
def claims_contradictions_resolved(kbflow: KbflowResource) -> dg.AssetCheckResult:
    standing = pipeline.confirmed_contradictions(kbflow.open_lake(), kbflow.settings())
    pairs = [
        {"relation": c["relation"]["relation_id"], "a": c["a"]["claim_id"], "b": c["b"]["claim_id"]} for c in standing
    ]
    rows = [f"| {c['relation']['relation_id']} | {_clip(c['a']['text'])} | {_clip(c['b']['text'])} |" for c in standing]
    summary = (
        "| relation | claim | contradicted by |\n| --- | --- | --- |\n" + "\n".join(rows)
        if rows
        else "every confirmed contradiction is resolved"
    )
    return dg.AssetCheckResult(
        passed=not standing,
        severity=dg.AssetCheckSeverity.WARN,
        description="supersede or dispute one claim of each: `kbflow claims conflicts --confirmed`"
        if standing
        else "every confirmed contradiction is resolved",
        metadata={
            "unresolved": len(standing),
            "pairs": dg.MetadataValue.json(pairs[:100]),
            "summary": dg.MetadataValue.md(summary),
        },
    )
