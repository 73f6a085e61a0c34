"""The ``claims_evidence`` asset: after each search index, flag claims whose cited text the lake no longer holds."""

# no `from __future__ import annotations`: Dagster inspects the context type hints at runtime

import dagster as dg

from kbflow import pipeline
from kbflow import schema as S
from kbflow.claims import Claims
from kbflow_dagster.corpus import RESULT, _step, search_index
from kbflow_dagster.resources import KbflowResource


def _clip(text, width: int = 80) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


@dg.asset(
    group_name="claims",
    deps=[search_index],
    automation_condition=dg.AutomationCondition.eager(),  # after every publish of the search index
    description="Every citation of every claim not superseded, checked against the lake: claims whose cited "
    "text is gone are flagged evidence_stale (old and new text kept) for a person to review; statuses stay.",
)
def claims_evidence(kbflow: KbflowResource) -> dg.MaterializeResult:
    lake = kbflow.open_lake()
    out = _step(pipeline.check_claims, lake, kbflow.settings()) or {
        "claims_checked": 0, "evidence_checked": 0, "stale": [], "newly_stale": [], "cleared": []
    }  # fmt: skip
    rows = []
    if out["stale"]:
        store = Claims.open(lake, settings=kbflow.settings(), actor=("system", "dagster"))
        for cid in out["stale"]:
            claim = store.get(cid)
            for s in claim.stale:
                now = _clip(s.new_text) or "(gone)"
                rows.append(f"| {cid} | {claim.status} | {_clip(claim.text)} | {_clip(s.old_text)} | {now} |")
    summary = (
        f"{len(out['stale'])} of {out['claims_checked']} claims cite text the lake no longer holds "
        f"({len(out['newly_stale'])} new, {len(out['cleared'])} cleared)."
    )
    if rows:
        summary += "\n\n| claim | status | claim text | cited | now |\n| --- | --- | --- | --- | --- |\n" + "\n".join(
            rows
        )
    return dg.MaterializeResult(
        metadata={
            "claims_checked": out["claims_checked"],
            "citations_checked": out["evidence_checked"],
            "stale_claims": len(out["stale"]),
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
