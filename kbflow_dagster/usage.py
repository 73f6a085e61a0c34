"""The ``insights`` asset: the query and citation logs' report (kbflow.usage.insights) as a Markdown table."""

# no `from __future__ import annotations`: Dagster reads the config annotation at run time

import dagster as dg

from kbflow.usage.insights import insights as build_insights
from kbflow_dagster.resources import KbflowResource


class InsightsConfig(dg.Config):
    """The report's window (``7d``, ``12h``, an ISO date, or ``all``) and rows per table."""

    since: str = "7d"
    top: int = 20


@dg.asset(
    group_name="usage",
    description="Top queries, content gaps (no hit or no good match), most and never cited sources, "
    "searches per origin, from the lake's query_log and citation_log.",
)
def insights(config: InsightsConfig, kbflow: KbflowResource) -> dg.MaterializeResult:
    report = build_insights(kbflow.open_lake(), None if config.since == "all" else config.since, top=config.top)
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.md(report.to_markdown()),
            "queries": report.queries,
            "citations": report.citations,
            "content_gaps": report.content_gaps.height,
            "never_cited_sources": report.never_cited.height,
        }
    )
