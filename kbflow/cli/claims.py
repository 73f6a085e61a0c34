"""``kbflow claims ...``: learn, recall, show, verify, dispute, supersede, history, list and check claims
(relations and conflicts: :mod:`kbflow.cli.relations`, commands of the same group)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kbflow.cli.options import _lake_option
from kbflow.errors import ClaimError
from kbflow.text.terms import for_terminal

__all__ = ["claims_command"]

#: exit status of ``kbflow claims check`` when some claim's evidence is stale (as ``kbflow resolve``)
EXIT_STALE = 4
_STATUSES = ["hypothesis", "inferred", "observed", "verified", "disputed", "superseded"]


def _echo(text: str, **kwargs: Any) -> None:
    """A line for a person: claims are anyone's text, so their control characters print as escapes."""
    click.echo(for_terminal(text), **kwargs)


def _store(ctx: click.Context, actor: str | None = None):
    from kbflow.claims import Claims
    from kbflow.config import Settings
    from kbflow.lake import Lake

    settings = Settings.coerce(None, lake=(ctx.obj or {}).get("lake"))
    return Claims.open(Lake(settings.lake), settings=settings, actor=actor)


def _evidence_options(fn):
    options = [
        click.option(
            "--cite",
            "cites",
            multiple=True,
            metavar="CHUNK_ID",
            help="Cite a chunk of the lake (an id a search printed); repeatable.",
        ),
        click.option("--url", "urls", multiple=True, metavar="URL", help="A web page as evidence; repeatable."),
        click.option(
            "--tool-output",
            "tool_outputs",
            multiple=True,
            metavar="TOOL=FILE",
            help="A tool's output as evidence: the tool's name and a file holding the snippet ('-': stdin).",
        ),
        click.option(
            "--inferred-by",
            "inferences",
            multiple=True,
            metavar="MODEL=RATIONALE",
            help="A model's inference (weak evidence: only for --status hypothesis or inferred).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _evidence(ctx: click.Context, store, cites, urls, tool_outputs, inferences) -> list:
    from kbflow.claims import Evidence

    out = [Evidence.from_chunk(c, store.lake) for c in cites]
    out += [Evidence.url(u) for u in urls]
    for item in tool_outputs:
        tool, sep, path = item.partition("=")
        if not sep or not tool or not path:
            raise ClaimError(f"--tool-output takes TOOL=FILE, got {item!r}")
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8", errors="replace").read()
        except OSError as exc:
            raise ClaimError(f"{path}: cannot read the tool output ({exc.strerror or exc})") from None
        out.append(Evidence.tool_output(tool, text))
    for item in inferences:
        model, sep, rationale = item.partition("=")
        if not sep or not model or not rationale:
            raise ClaimError(f"--inferred-by takes MODEL=RATIONALE, got {item!r}")
        out.append(Evidence.model_inference(model, rationale))
    return out


def _actor_option(fn):
    return click.option(
        "--actor",
        default=None,
        metavar="TYPE:ID",
        help="Who acts: agent|user|system|tool and a name (default user:<your login name>).",
    )(fn)


def _json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(fn)


def _show(claim, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(claim.to_dict(), default=str))
        return
    flag = "  [stale evidence]" if claim.evidence_stale else ""
    _echo(f"{claim.claim_id}  {claim.status}  confidence {claim.confidence:g}  scope {claim.scope}{flag}")
    _echo(f"  {claim.text}")
    meta = [f"by {claim.actor}", f"created {claim.created_at:%Y-%m-%d %H:%M}"]
    if claim.domain:
        meta.append(f"domain {claim.domain}")
    if claim.tags:
        meta.append("tags " + ",".join(claim.tags))
    if claim.supersedes:
        meta.append(f"supersedes {claim.supersedes}")
    if claim.superseded_by:
        meta.append(f"superseded by {claim.superseded_by}")
    _echo("  " + ", ".join(meta))
    if claim.valid_from or claim.valid_to:
        _echo(f"  holds {claim.valid_from or '…'} .. {claim.valid_to or '…'}")
    for i, ev in enumerate(claim.evidence):
        _echo(f"  evidence {i}: {ev.render()}")
    for s in claim.stale:
        _echo(f"  STALE evidence {s.evidence} ({s.chunk_id}): {s.reason}")
        _echo(f"    cited: {_clip(s.old_text)}")
        _echo(f"    now:   {_clip(s.new_text) if s.new_text is not None else '(gone)'}")


def _clip(text: str | None, width: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


@click.group("claims")
def claims_command() -> None:
    """Claims learned from the corpus: evidence required, a lifecycle, an append-only history.

    \b
    Statuses: hypothesis -> observed | disputed; inferred -> verified | disputed;
    observed -> verified | disputed | superseded; verified -> disputed | superseded;
    disputed -> verified | superseded (superseded only via `kbflow claims supersede`).
    """


@claims_command.command("learn")
@_lake_option
@click.argument("text")
@_evidence_options
@click.option(
    "--scope", default="global", show_default=True, help="The claim's scope path (seen where its chunks are)."
)
@click.option(
    "--status",
    type=click.Choice(["observed", "inferred", "hypothesis"]),
    default=None,
    help="Default: observed; inferred when the only evidence is --inferred-by.",
)
@click.option("--confidence", type=click.FloatRange(0, 1), default=None, help="0..1 (default by status).")
@click.option("--domain", default=None, help="A domain label, e.g. finance or payments.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeatable.")
@click.option("--valid-from", default=None, metavar="DATE", help="When it starts to hold (YYYY-MM-DD).")
@click.option("--valid-to", default=None, metavar="DATE", help="When it stops holding (YYYY-MM-DD, included).")
@_actor_option
@_json_option
@click.pass_context
def learn(
    ctx, text, cites, urls, tool_outputs, inferences, scope, status, confidence, domain, tags, actor, as_json, **valid
):
    """Learn TEXT, with at least one piece of evidence (--cite, --url, --tool-output, --inferred-by).

    Without --valid-from/--valid-to, when it holds is read from TEXT ("in FY2022",
    "as of Q3 2023", "year ended December 31, 2022"), else from its evidence.
    """
    store = _store(ctx, actor)
    evidence = _evidence(ctx, store, cites, urls, tool_outputs, inferences)
    cid = store.learn(
        text, evidence, scope=scope, status=status, confidence=confidence, domain=domain, tags=tags, **valid
    )
    _show(store.get(cid), as_json) if as_json else _echo(cid)


@claims_command.command("recall")
@_lake_option
@click.argument("query")
@click.option("-k", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--scope", default=None, help="Only claims visible in this scope (it, its ancestors, global).")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(_STATUSES),
    help="Only these statuses; repeatable (default: observed, inferred, verified).",
)
@click.option("--all", "all_statuses", is_flag=True, help="Every status.")
@click.option("--domain", default=None)
@click.option("--tag", "tags", multiple=True)
@click.option("--valid-at", default=None, metavar="DATE", help="Only claims that hold in the world on DATE.")
@click.option("--as-of", default=None, metavar="TIMESTAMP", help="Answer as the store would have then (ISO 8601, UTC).")
@_json_option
@click.pass_context
def recall(ctx, query, k, scope, statuses, all_statuses, domain, tags, valid_at, as_of, as_json):
    """The claims best matching QUERY (hybrid search over claim texts); stale evidence is marked.

    --valid-at DATE keeps what holds on DATE (valid time); --as-of TIMESTAMP replays
    the store's history to what it believed then (record time). They combine.
    """
    from kbflow.claims import ACTIVE

    chosen: Any = None if all_statuses else (statuses or ACTIVE)
    hits = _store(ctx).recall(
        query, k, scope=scope, statuses=chosen, domain=domain, tags=tags or None, valid_at=valid_at, as_of=as_of
    )
    if as_json:
        click.echo(json.dumps({"query": query, "hits": hits.to_dicts()}, default=str))
        return
    if not hits:
        _echo("no claims match")
    for h in hits:
        stale = "  [stale evidence]" if h.stale else ""
        _echo(f"{h.rank:>2}. {h.claim.claim_id}  {h.claim.status:<10} {h.claim.confidence:.2f}{stale}")
        _echo(f"    {h.claim.text}")


@claims_command.command("show")
@_lake_option
@click.argument("claim_id")
@_json_option
@click.pass_context
def show(ctx, claim_id, as_json):
    """A claim: status, evidence (stale evidence with the old and new text), links."""
    _show(_store(ctx).get(claim_id), as_json)


@claims_command.command("list")
@_lake_option
@click.option("--status", "statuses", multiple=True, type=click.Choice(_STATUSES), help="Repeatable.")
@click.option("--scope", default=None)
@click.option("--stale", is_flag=True, help="Only claims with stale evidence.")
@_json_option
@click.pass_context
def list_claims(ctx, statuses, scope, stale, as_json):
    """Every claim (of these statuses, visible in SCOPE), oldest first."""
    for claim in _store(ctx).list(statuses=statuses or None, scope=scope, stale=True if stale else None):
        if as_json:
            click.echo(json.dumps(claim.to_dict(), default=str))
        else:
            flag = "  [stale evidence]" if claim.evidence_stale else ""
            _echo(f"{claim.claim_id}  {claim.status:<10} {claim.scope}  {_clip(claim.text, 100)}{flag}")


@claims_command.command("verify")
@_lake_option
@click.argument("claim_id")
@click.option("--reason", default=None)
@click.option("--confidence", type=click.FloatRange(0, 1), default=None, help="The claim's new confidence.")
@click.option("--expect", default=None, metavar="STATUS", help="Refuse unless the claim is still in STATUS.")
@_evidence_options
@_actor_option
@_json_option
@click.pass_context
def verify(ctx, claim_id, reason, confidence, expect, cites, urls, tool_outputs, inferences, actor, as_json):
    """Mark CLAIM_ID verified (from observed, inferred or disputed)."""
    store = _store(ctx, actor)
    evidence = _evidence(ctx, store, cites, urls, tool_outputs, inferences)
    _show(store.verify(claim_id, reason=reason, evidence=evidence, confidence=confidence, expect=expect), as_json)


@claims_command.command("dispute")
@_lake_option
@click.argument("claim_id")
@click.option("--reason", required=True, help="Why the claim no longer holds.")
@click.option("--expect", default=None, metavar="STATUS", help="Refuse unless the claim is still in STATUS.")
@_evidence_options
@_actor_option
@_json_option
@click.pass_context
def dispute(ctx, claim_id, reason, expect, cites, urls, tool_outputs, inferences, actor, as_json):
    """Mark CLAIM_ID disputed, with a reason (and evidence, if any)."""
    store = _store(ctx, actor)
    evidence = _evidence(ctx, store, cites, urls, tool_outputs, inferences)
    _show(store.dispute(claim_id, reason=reason, evidence=evidence, expect=expect), as_json)


@claims_command.command("supersede")
@_lake_option
@click.argument("old_id")
@click.argument("new_id")
@click.option("--reason", default=None)
@click.option("--because", default=None, metavar="RELATION_ID", help="The relation between them that led to it.")
@_actor_option
@_json_option
@click.pass_context
def supersede(ctx, old_id, new_id, reason, because, actor, as_json):
    """Replace OLD_ID by NEW_ID (learn the new claim first)."""
    _show(_store(ctx, actor).supersede(old_id, new_id, reason=reason, because=because), as_json)


@claims_command.command("history")
@_lake_option
@click.argument("claim_id")
@_json_option
@click.pass_context
def history(ctx, claim_id, as_json):
    """Every event of CLAIM_ID (or of a relation) in order: applied and refused attempts, by whom, why, when."""
    for event in _store(ctx).history(claim_id):
        click.echo(json.dumps(event.to_dict(), default=str) if as_json else event.render())


@claims_command.command("check")
@_lake_option
@click.option("--lake-only", is_flag=True, help="Check against the lake only, not the source files.")
@_json_option
@click.pass_context
def check(ctx, lake_only, as_json):
    """Check every claim's citations; flag claims whose sources no longer hold the cited text (exit 4 if any)."""
    store = _store(ctx)
    report = store.check_evidence(against_sources=not lake_only)
    if as_json:
        click.echo(json.dumps(report.to_dict(), default=str))
    else:
        _echo(
            f"checked {report.evidence_checked} citation(s) of {report.claims_checked} claim(s): "
            f"{len(report.stale)} claim(s) with stale evidence ({len(report.newly_stale)} new, "
            f"{len(report.cleared)} cleared)"
        )
        for cid in report.stale:
            _echo("")
            _show(store.get(cid), False)
        for cid, problems in report.unchecked.items():
            for problem in problems:
                _echo(f"could not check {cid}: {problem}", err=True)
    if report.stale:
        sys.exit(EXIT_STALE)
