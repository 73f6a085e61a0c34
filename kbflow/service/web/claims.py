"""The claim page (``/claims/{id}``), a pure function: a claim, its relations and its timeline in, HTML out.

The timeline shows both time axes: when the claim holds in the world (its
valid time) and, event by event, when the store learned, changed or was
refused a change (record time), with who acted and why. Every value shown is
escaped, as on every page of :mod:`kbflow.service.web.pages`.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from kbflow.service.web.pages import _e, _pill, layout

__all__ = ["claim_page"]


def _link(claim_id: str) -> str:
    return f'<a class=cite href="/claims/{urllib.parse.quote(claim_id)}">{_e(claim_id)}</a>'


def _evidence(items: list[dict[str, Any]]) -> str:
    rows = []
    for ev in items:
        where = ev.get("ref", "")
        if ev.get("kind") == "citation":
            where = f'<a class=cite href="/chunks/{urllib.parse.quote(where)}">{_e(where)}</a>'
        elif ev.get("kind") == "url":
            where = f'<a class=cite rel=noreferrer href="{_e(where)}">{_e(where)}</a>'
        else:
            where = _e(where)
        rows.append(f"<li>{_e(ev.get('kind'))} {where} <span class=muted>{_e((ev.get('text') or '')[:300])}</span>")
    return "<ul>" + "".join(rows) + "</ul>" if rows else "<p class=muted>none</p>"


def _relations(claim_id: str, relations: list[dict[str, Any]]) -> str:
    if not relations:
        return "<p class=muted>none</p>"
    rows = []
    for r in relations:
        mine = r["source"] == claim_id
        phrase = f"this {_e(r['type'])} {_link(r['target'])}" if mine else f"{_link(r['source'])} {_e(r['type'])} this"
        decided = f" · decided by {_e(r['decided_by']['type'])}:{_e(r['decided_by']['id'])}" if r["decided_by"] else ""
        rows.append(
            f"<tr><td class=cite>{_e(r['relation_id'])}</td><td>{phrase}</td><td>{_pill(r['status'])}</td>"
            f"<td>{_e(r['actor']['type'])}:{_e(r['actor']['id'])}{decided}</td>"
            f"<td>{_e(r.get('reason') or '')}</td></tr>"
        )
    head = "<tr><th>relation</th><th>says</th><th>status</th><th>by</th><th>reason</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _timeline(events: list[dict[str, Any]]) -> str:
    rows = []
    for e in events:
        move = f"{e['from_status'] or '–'} → {e['to_status'] or '–'}" if e["to_status"] else ""
        why = e.get("reason") or e["data"].get("refused") or ""
        link = e["data"].get("superseded_by") or e["data"].get("supersedes")
        rows.append(
            f"<tr><td>{_e(e['at'][:19].replace('T', ' '))}</td><td>{_e(e['event'])}</td><td>{_e(move)}</td>"
            f"<td>{_e(e['outcome'])}</td><td>{_e(e['actor']['type'])}:{_e(e['actor']['id'])}</td>"
            f"<td>{_e(why)}{' ' + _link(link) if link else ''}</td></tr>"
        )
    head = "<tr><th>recorded (UTC)</th><th>event</th><th>status</th><th>outcome</th><th>by</th><th>why</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def claim_page(claim: dict[str, Any], relations: list[dict[str, Any]], events: list[dict[str, Any]]) -> str:
    """A claim: text, status, valid time, evidence, its relations, and its timeline (record time)."""
    start, end = claim.get("valid_from"), claim.get("valid_to")
    holds = f"holds {_e(start or '…')} .. {_e(end or '…')}" if start or end else "holds: not stated (always)"
    stale = " <span class='pill stale'>stale evidence</span>" if claim.get("evidence_stale") else ""
    body = (
        f"<h1>Claim <span class=cite>{_e(claim['claim_id'])}</span></h1>"
        f"<p>{_pill(claim['status'])}{stale} confidence {_e(claim['confidence'])} · scope {_e(claim['scope'])}</p>"
        f"<p style='font-size:17px'>{_e(claim['text'])}</p>"
        f"<p><b>Valid time</b>: {holds}</p>"
        f"<h2>Evidence</h2>{_evidence(claim.get('evidence') or [])}"
        f"<h2>Relations</h2>{_relations(claim['claim_id'], relations)}"
        f"<h2>Timeline</h2>{_timeline(events)}"
    )
    return layout(f"claim {claim['claim_id']}", body)
