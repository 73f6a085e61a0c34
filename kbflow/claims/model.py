"""Claims and their evidence: plain, frozen values, no storage and no rules.

A :class:`Claim` is something learned from the corpus ("payments-service uses
the saga pattern"), never without :class:`Evidence`. Its status moves only as
:mod:`kbflow.claims.lifecycle` allows; every change is an event of the claim's
history (:mod:`kbflow.claims.events`, kept by :mod:`kbflow.claims.log`).
"""

from __future__ import annotations

import getpass
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from kbflow.errors import ClaimError
from kbflow.lake.sql import sql_str
from kbflow.text.terms import lone_half

if TYPE_CHECKING:
    from kbflow.lake.lake import Lake
    from kbflow.records import Hit

__all__ = [
    "ACTIVE",
    "ACTOR_TYPES",
    "EVIDENCE_KINDS",
    "INITIAL",
    "STATUSES",
    "Actor",
    "Claim",
    "Evidence",
    "StaleEvidence",
]

HYPOTHESIS, INFERRED, OBSERVED, VERIFIED, DISPUTED, SUPERSEDED = (
    "hypothesis", "inferred", "observed", "verified", "disputed", "superseded"
)  # fmt: skip
STATUSES = (HYPOTHESIS, INFERRED, OBSERVED, VERIFIED, DISPUTED, SUPERSEDED)
#: the statuses a claim may be learned with
INITIAL = (HYPOTHESIS, INFERRED, OBSERVED)
#: the statuses :meth:`Claims.recall <kbflow.claims.store.Claims.recall>` returns unless told otherwise
ACTIVE = (OBSERVED, INFERRED, VERIFIED)

ACTOR_TYPES = ("agent", "user", "system", "tool")
CITATION, URL, TOOL_OUTPUT, MODEL_INFERENCE = "citation", "url", "tool_output", "model_inference"
EVIDENCE_KINDS = (CITATION, URL, TOOL_OUTPUT, MODEL_INFERENCE)

#: the longest claim text, tool-output snippet or reason kept (characters)
MAX_TEXT = 4_000
MAX_SNIPPET = 20_000
MAX_EVIDENCE = 50


@dataclass(frozen=True)
class Actor:
    """Who did something: ``type`` is one of :data:`ACTOR_TYPES`, ``id`` names them."""

    type: str
    id: str

    def __post_init__(self) -> None:
        if self.type not in ACTOR_TYPES:
            raise ClaimError(f"actor type must be one of {', '.join(ACTOR_TYPES)}, got {self.type!r}")
        if not isinstance(self.id, str) or not self.id.strip() or len(self.id) > 200:
            raise ClaimError(f"actor id must be a non-empty string of at most 200 characters, got {self.id!r}")
        check_whole("actor id", self.id)

    @classmethod
    def coerce(cls, value: Actor | tuple[str, str] | str | None) -> Actor:
        """An actor from ``("agent", "reviewer-1")``, ``"agent:reviewer-1"``, an :class:`Actor`, or ``None``
        (the person running this process: ``("user", <login name>)``)."""
        if value is None:
            try:
                name = getpass.getuser()
            except Exception:  # no login name (a container without one)
                name = "unknown"
            return cls("user", name)
        if isinstance(value, Actor):
            return value
        if isinstance(value, str):
            kind, sep, ident = value.partition(":")
            if not sep:
                raise ClaimError(f"actor must read TYPE:ID (e.g. agent:reviewer-1), got {value!r}")
            return cls(kind, ident)
        if isinstance(value, Sequence) and len(value) == 2:
            return cls(str(value[0]), str(value[1]))
        raise ClaimError(f"actor must be (type, id), 'type:id' or an Actor, got {value!r}")

    def __str__(self) -> str:
        return f"{self.type}:{self.id}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence for a claim, typed honestly.

    ``kind``:

    - ``citation``: a kbflow chunk. ``ref`` is its chunk id, ``digest`` its
      content hash (``chunk_hash``), ``citation`` its full citation
      (:meth:`Citation.to_dict <kbflow.records.Citation.to_dict>`) and
      ``text`` the text cited, so the evidence resolves, and shows what it
      said, after any re-ingest. Build it with :meth:`from_hit` or
      :meth:`from_chunk`.
    - ``url``: a web address; ``text`` an optional quote from it.
    - ``tool_output``: ``ref`` names the tool, ``text`` is the stored output
      snippet and ``digest`` its sha256.
    - ``model_inference``: ``ref`` names the model, ``text`` its rationale.
      Weak evidence: allowed only for claims in ``hypothesis`` or ``inferred``
      with a confidence below 1.
    """

    kind: str
    ref: str
    text: str | None = None
    digest: str | None = None
    citation: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in EVIDENCE_KINDS:
            raise ClaimError(f"evidence kind must be one of {', '.join(EVIDENCE_KINDS)}, got {self.kind!r}")
        if not isinstance(self.ref, str) or not self.ref.strip():
            raise ClaimError(f"{self.kind} evidence needs a non-empty ref (chunk id, URL, tool or model name)")
        if self.text is not None and not isinstance(self.text, str):
            raise ClaimError(f"{self.kind} evidence text must be a string")
        check_whole(f"{self.kind} evidence", self.ref, self.text, self.digest)
        if self.kind == CITATION:
            if not self.digest or not isinstance(self.citation, Mapping) or self.text is None:
                raise ClaimError(
                    f"citation evidence {self.ref!r} needs the chunk's hash, citation and text; build it with "
                    "Evidence.from_hit(hit) or Evidence.from_chunk(chunk_id, lake)"
                )
        elif self.kind == URL:
            if not self.ref.startswith(("http://", "https://")):
                raise ClaimError(f"url evidence must be an http(s) URL, got {self.ref!r}")
        elif self.kind == TOOL_OUTPUT:
            if not self.text:
                raise ClaimError(f"tool_output evidence of {self.ref!r} needs the output snippet")
            if len(self.text) > MAX_SNIPPET:
                raise ClaimError(
                    f"tool_output evidence of {self.ref!r}: {len(self.text):,} characters; store a snippet of at "
                    f"most {MAX_SNIPPET:,}"
                )
            if self.digest is not None and self.digest != _digest(self.text):
                raise ClaimError(f"tool_output evidence of {self.ref!r}: the digest does not match the snippet")
            if self.digest is None:
                object.__setattr__(self, "digest", _digest(self.text))
        elif self.kind == MODEL_INFERENCE and not self.text:
            raise ClaimError(f"model_inference evidence of {self.ref!r} needs the model's rationale")

    # --- constructors ---------------------------------------------------------------
    @classmethod
    def from_hit(cls, hit: Hit) -> Evidence:
        """Citation evidence of a search hit (its chunk id, hash, citation and text)."""
        return cls(CITATION, hit.chunk_id, hit.text, hit.citation.chunk_hash, hit.citation.to_dict())

    @classmethod
    def from_chunk(cls, chunk_id: str, lake: Lake | str) -> Evidence:
        """Citation evidence of the chunk ``chunk_id`` as the lake holds it now."""
        from kbflow import schema as S
        from kbflow.lake.lake import Lake

        lake = lake if isinstance(lake, Lake) else Lake(lake, create=False)
        if not isinstance(chunk_id, str) or not chunk_id or len(chunk_id) > 200:
            raise ClaimError(f"chunk id must be a non-empty string of at most 200 characters, got {chunk_id!r}")
        columns = [S.CHUNK_ID, S.SOURCE_ID, S.SOURCE_TYPE, S.URI, S.TITLE, S.CONTENT_HASH, S.CHUNK_HASH, S.LOCATOR]
        rows = lake.scan(S.CHUNKS, [*columns, S.TEXT], f"{S.CHUNK_ID} = {sql_str(chunk_id)}").to_pylist()
        if not rows:
            raise ClaimError(f"no chunk {chunk_id!r} in {lake.uri}; cite a chunk id a search returned")
        return cls.from_row(rows[0])

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Evidence:
        """Citation evidence of a ``chunks`` row (its id, hash, text and citation columns)."""
        from kbflow import schema as S
        from kbflow.records import Citation

        return cls(CITATION, row[S.CHUNK_ID], row[S.TEXT], row[S.CHUNK_HASH], Citation.from_row(row).to_dict())

    @classmethod
    def url(cls, url: str, quote: str | None = None) -> Evidence:
        return cls(URL, url, quote)

    @classmethod
    def tool_output(cls, tool: str, output: str) -> Evidence:
        return cls(TOOL_OUTPUT, tool, output)

    @classmethod
    def model_inference(cls, model: str, rationale: str) -> Evidence:
        return cls(MODEL_INFERENCE, model, rationale)

    @classmethod
    def coerce(cls, value: Evidence | Hit | Mapping[str, Any]) -> Evidence:
        """Evidence from an :class:`Evidence`, a :class:`~kbflow.records.Hit` or a :meth:`to_dict` object."""
        from kbflow.records import Hit

        if isinstance(value, Evidence):
            return value
        if isinstance(value, Hit):
            return cls.from_hit(value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise ClaimError(f"evidence must be Evidence, a search Hit or a dict, got {type(value).__name__}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        unknown = set(data) - {"kind", "ref", "text", "digest", "citation"}
        if unknown or "kind" not in data or "ref" not in data:
            raise ClaimError(f"evidence is {{kind, ref, text?, digest?, citation?}}, got keys {sorted(data)}")
        return cls(data["kind"], data["ref"], data.get("text"), data.get("digest"), data.get("citation"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "ref": self.ref}
        for name in ("text", "digest", "citation"):
            value = getattr(self, name)
            if value is not None:
                out[name] = dict(value) if name == "citation" else value
        return out

    def render(self) -> str:
        """A short human string: the citation rendered, the URL, the tool or the model."""
        if self.kind == CITATION and self.citation:
            from kbflow.records import Citation

            try:
                return f"{Citation.from_dict(self.citation).render()} ({self.ref})"
            except (KeyError, TypeError, ValueError):
                return self.ref
        return f"{self.kind} {self.ref}"


def evidence_json(evidence: Iterable[Evidence]) -> str:
    return json.dumps([e.to_dict() for e in evidence], ensure_ascii=False, separators=(",", ":"))


def evidence_from_json(text: str | None) -> tuple[Evidence, ...]:
    return tuple(Evidence.from_dict(e) for e in json.loads(text or "[]"))


@dataclass(frozen=True)
class StaleEvidence:
    """A citation evidence whose source no longer holds what it cited (:meth:`Claims.check_evidence`)."""

    evidence: int  # its index in the claim's evidence
    chunk_id: str
    reason: str
    old_text: str | None
    new_text: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence,
            "chunk_id": self.chunk_id,
            "reason": self.reason,
            "old_text": self.old_text,
            "new_text": self.new_text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StaleEvidence:
        return cls(int(data["evidence"]), data["chunk_id"], data["reason"], data.get("old_text"), data.get("new_text"))


@dataclass(frozen=True)
class Claim:
    """A claim's current state (its history is :meth:`Claims.history`)."""

    claim_id: str
    text: str
    status: str
    confidence: float
    scope: str
    evidence: tuple[Evidence, ...]
    actor: Actor
    created_at: datetime
    updated_at: datetime
    domain: str | None = None
    tags: tuple[str, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None
    #: the citation evidence its sources no longer hold (empty: none known)
    stale: tuple[StaleEvidence, ...] = ()
    #: when it holds in the world (both ends included; ``None``: open), given or read from its words
    valid_from: date | None = None
    valid_to: date | None = None
    #: how many events of its history this state folds in, and the last one's number
    seq: int = 0
    n: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def evidence_stale(self) -> bool:
        return bool(self.stale)

    @property
    def valid(self) -> tuple[date | None, date | None]:
        """``(valid_from, valid_to)``: when the claim holds in the world."""
        return self.valid_from, self.valid_to

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "text": self.text,
            "status": self.status,
            "confidence": self.confidence,
            "scope": self.scope,
            "domain": self.domain,
            "tags": list(self.tags),
            "actor": {"type": self.actor.type, "id": self.actor.id},
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "evidence": [e.to_dict() for e in self.evidence],
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "evidence_stale": self.evidence_stale,
            "stale": [s.to_dict() for s in self.stale],
            "valid_from": self.valid_from.isoformat() if self.valid_from else None,
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
            "seq": self.seq,
        }

    def with_(self, **changes: Any) -> Claim:
        return replace(self, **changes)


def check_whole(what: str, *values: Any) -> None:
    """Raise :class:`ClaimError` where a string holds half of a UTF-16 surrogate pair (JSON can escape one
    alone, ``"\\ud83d"``): it is no character, and no UTF-8 column stores it."""
    for value in values:
        half = lone_half(value) if isinstance(value, str) else None
        if half:
            raise ClaimError(f"{what} holds {half}; send the whole character or leave it out")
