"""``kbflow claims relate|unrelate|confirm|reject|relations|conflicts``: relations between claims, and the
candidate contradictions a person decides (commands of the ``kbflow claims`` group)."""

from __future__ import annotations

import json

import click

from kbflow.cli.claims import (
    _actor_option,
    _echo,
    _evidence,
    _evidence_options,
    _json_option,
    _store,
    claims_command,
)
from kbflow.cli.options import _lake_option

__all__ = ["conflicts", "relate", "relations"]

_TYPES = ["entails", "contradicts", "refines", "derived_from"]
_RELATION_STATUSES = ["proposed", "confirmed", "rejected", "withdrawn"]


def _show_relation(rel, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(rel.to_dict(), default=str))
        return
    _echo(rel.render())
    decided = f", decided by {rel.decided_by}" if rel.decided_by else ""
    _echo(f"  scope {rel.scope}, proposed {rel.created_at:%Y-%m-%d %H:%M}{decided}")
    if rel.reason:
        _echo(f"  reason: {rel.reason}")
    for i, ev in enumerate(rel.evidence):
        _echo(f"  evidence {i}: {ev.render()}")


@claims_command.command("relate")
@_lake_option
@click.argument("source")
@click.argument("type_", metavar="TYPE", type=click.Choice(_TYPES))
@click.argument("target")
@click.option("--reason", default=None, help="Why they relate.")
@_evidence_options
@_actor_option
@_json_option
@click.pass_context
def relate(ctx, source, type_, target, reason, cites, urls, tool_outputs, inferences, actor, as_json):
    """Propose that claim SOURCE entails, contradicts, refines or is derived_from claim TARGET.

    \b
    It starts proposed; `kbflow claims confirm` or `reject` decides it (confirming
    a contradiction is a person's act). No relation changes either claim's status.
    An agent or tool gives evidence (--cite, --url, ...); a person may rest on the claims' own.
    """
    store = _store(ctx, actor)
    evidence = _evidence(ctx, store, cites, urls, tool_outputs, inferences)
    rid = store.relate(source, type_, target, evidence=evidence, reason=reason)
    _show_relation(store.relation(rid), as_json) if as_json else _echo(rid)


def _decide(name: str, verb: str, help_text: str):
    @claims_command.command(name, help=help_text)
    @_lake_option
    @click.argument("relation_id")
    @click.option("--reason", default=None)
    @_actor_option
    @_json_option
    @click.pass_context
    def command(ctx, relation_id, reason, actor, as_json):
        store = _store(ctx, actor)
        _show_relation(getattr(store, verb)(relation_id, reason=reason), as_json)

    return command


confirm = _decide("confirm", "confirm_relation", "Confirm RELATION_ID (a contradiction: by a person, actor user).")
reject = _decide("reject", "reject_relation", "Reject RELATION_ID (a rejected contradiction is not listed again).")
unrelate = _decide("unrelate", "unrelate", "Withdraw RELATION_ID (final; its history stays).")


@claims_command.command("relations")
@_lake_option
@click.argument("claim_id", required=False)
@click.option("--type", "types", multiple=True, type=click.Choice(_TYPES), help="Repeatable.")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(_RELATION_STATUSES),
    help="Repeatable (default: proposed and confirmed).",
)
@click.option("--all", "all_statuses", is_flag=True, help="Every status.")
@click.option("--scope", default=None, help="Only relations visible in this scope.")
@_json_option
@click.pass_context
def relations(ctx, claim_id, types, statuses, all_statuses, scope, as_json):
    """The relations of CLAIM_ID (or of every claim), oldest first."""
    chosen = None if all_statuses else (statuses or ("proposed", "confirmed"))
    found = _store(ctx).relations(claim_id, types=types or None, statuses=chosen, scope=scope)
    for rel in found:
        click.echo(json.dumps(rel.to_dict(), default=str)) if as_json else _echo(rel.render())
    if not found and not as_json:
        _echo("no relations")


@claims_command.command("conflicts")
@_lake_option
@click.option("--scope", default=None, help="Only claims visible in this scope.")
@click.option("--confirmed", "which", flag_value="confirmed", help="Only contradictions a person confirmed.")
@click.option("--undecided", "which", flag_value="undecided", help="Only candidates no one decided yet.")
@_json_option
@click.pass_context
def conflicts(ctx, scope, which, as_json):
    """Candidate contradictions for a person to decide: the same subject and attribute, different values,
    overlapping valid time. Changes nothing.

    \b
    Decide one: `kbflow claims relate A contradicts B` then `confirm`, or `reject`;
    then `supersede` or `dispute` a claim if that is what you decide.
    """
    confirmed = {"confirmed": True, "undecided": False}.get(which or "")
    found = _store(ctx).conflicts(scope=scope, confirmed=confirmed)
    if as_json:
        click.echo(json.dumps({"conflicts": [c.to_dict() for c in found]}, default=str))
        return
    if not found:
        _echo("no candidate contradictions")
    for c in found:
        _echo(c.render())
        for claim in (c.a, c.b):
            evidence = "; ".join(ev.render() for ev in claim.evidence[:2])
            _echo(f"    {claim.claim_id} [{claim.status}] {claim.text}  ({evidence})")
