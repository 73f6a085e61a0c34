"""One Arrow schema per lake table; every column name is a constant here.

Tables (see docs/design.md, "The lake"):

============ ============================== ============================================
table        key                            holds
============ ============================== ============================================
sources      ``source_id``                  the registry: type, uri, scope, hash, status
documents    (``source_id``, ``unit_hash``) raw units as loaded: text + base locator
chunks       ``chunk_id``                   chunk text, hash, kind, position, locator
embeddings   (``chunk_hash``, ``model_id``) one vector per distinct chunk text per model
search       ``chunk_id``                   chunks joined with the active model's vectors
eval_runs    ``run_id``                     one evaluated configuration (kbflow.evaluate)
query_log    ``query_id``                   one search from a user-facing surface (kbflow.usage)
citation_log ``citation_id``                one chunk put in front of a model (kbflow.usage)
api_keys     ``key_id``                     keys ``kbflow serve`` accepts, hashed (kbflow.usage.keys)
claims       ``claim_id``                   learned claims, current state, with evidence (kbflow.claims)
claim_events ``n``                          the claims' append-only history: the source of truth
claim_audit  ``n``                          one row per learn/observe/verify/dispute/supersede attempt
calibration  (``search_version``, model)    the lake's "no good match" curve (kbflow.retrieve.confidence)
============ ============================== ============================================

The locator is one struct column whose fields are the union of every locator
kind's fields (docs/design.md, "Provenance"); fields a kind does not use are null.
"""

from __future__ import annotations

import json

import pyarrow as pa

# --- table names -------------------------------------------------------------
SOURCES = "sources"
DOCUMENTS = "documents"
CHUNKS = "chunks"
EMBEDDINGS = "embeddings"
SEARCH = "search"
EVAL_RUNS = "eval_runs"

# --- column names ------------------------------------------------------------
SOURCE_ID = "source_id"
SOURCE_TYPE = "source_type"
URI = "uri"
TITLE = "title"
SCOPE = "scope"
CONTENT_HASH = "content_hash"
STATUS = "status"
CHUNK_COUNT = "chunk_count"
LAST_INDEXED = "last_indexed"
LAST_ERROR = "last_error"
ADDED_AT = "added_at"
OPTIONS = "options"
#: sources column: what the last load left out or could not read, as JSON ``[{"path", "reason", "failed"}]``
ISSUES = "issues"
#: sources column: the fingerprint of what ``documents`` holds; ``content_hash`` is only set once the
#: source's chunks and vectors are complete too (so a killed ingest still shows the source as stale)
LOADED_HASH = "loaded_hash"

UNIT_HASH = "unit_hash"
UNIT_KEY = "unit_key"
FILE_HASH = "file_hash"
LANGUAGE = "language"
TEXT = "text"
LOCATOR = "locator"
#: documents column: a unit's layout as JSON (PDF word boxes, web block css paths), for the chunkers and the resolver
LAYOUT = "layout"

CHUNK_ID = "chunk_id"
CHUNK_HASH = "chunk_hash"
CONTENT_KIND = "content_kind"
POSITION = "position"
CHUNKER = "chunker"
ROW_HASH = "row_hash"
#: chunks column: the context header embedded and indexed with the text (see kbflow.chunk.context)
CONTEXT = "context"
#: chunks column: hash of what is embedded (header + text): the key of the chunk's vector
EMBED_HASH = "embed_hash"
#: search-table column: what BM25 indexes (header + text); the hit's text stays ``text``
SEARCH_TEXT = "search_text"
#: search-table column: where a chunk is (path, symbol, title, heading path), indexed apart for a boost
SEARCH_NAMES = "search_names"
#: search-table column: the last part of a code chunk's symbol (``callHandlers`` of ``Logger.callHandlers``)
SYMBOL_NAME = "symbol_name"

MODEL_ID = "model_id"
VECTOR = "vector"
#: search-table column: a hit's citation, content kind and scope as one JSON string (see :func:`hit_json`)
HIT = "hit"
MODE = "mode"

# --- allowed values ----------------------------------------------------------
CONTENT_KINDS = ("doc", "code", "record", "pdf", "table", "web", "ticket")
GLOBAL_SCOPE = "global"

# --- source statuses (the registry's ``status`` column) -----------------------
#: registered or changed, not yet published in the search table
PENDING = "pending"
#: every unit loaded, chunked, embedded and published
INDEXED = "indexed"
#: indexed, but some of its files could not be read (``issues`` lists them)
PARTIAL = "partial"
#: the last ingest of the source failed (``last_error`` says why); what it held before stays
FAILED = "failed"
STATUSES = (PENDING, INDEXED, PARTIAL, FAILED)

# --- locator ------------------------------------------------------------------
BBOX = pa.list_(pa.float64(), 4)
REGION = pa.struct([("page", pa.int32()), ("bbox", BBOX)])
LOCATOR_TYPE = pa.struct(
    [
        ("kind", pa.string()),
        # doc / code / pdf
        ("path", pa.string()),
        ("heading_path", pa.string()),  # doc / web
        # doc / web / pdf / ticket / record
        ("char_start", pa.int64()),
        ("char_end", pa.int64()),
        ("line_start", pa.int64()),  # code
        ("line_end", pa.int64()),
        ("symbol", pa.string()),
        ("ast_path", pa.string()),
        ("page", pa.int32()),  # pdf
        ("page_label", pa.string()),
        ("bbox", BBOX),
        ("regions", pa.list_(REGION)),
        # pdf tables: the table's 1-based index on its page
        ("table", pa.int32()),
        ("url", pa.string()),  # web
        ("css_path", pa.string()),
        ("ticket_id", pa.string()),  # ticket
        ("comment_id", pa.string()),
        ("record_id", pa.string()),  # record
        ("field", pa.string()),
        # doc / code / web / ticket: a text file's legacy encoding where it is not UTF-8 (cp1252, latin-1, ...)
        ("encoding", pa.string()),
        ("ocr_confidence", pa.float64()),  # pdf: a scanned page read by OCR, the mean word confidence
    ]
)

# --- table schemas -------------------------------------------------------------
SOURCES_SCHEMA = pa.schema(
    [
        pa.field(SOURCE_ID, pa.string(), nullable=False),
        pa.field(SOURCE_TYPE, pa.string(), nullable=False),
        pa.field(URI, pa.string(), nullable=False),
        pa.field(TITLE, pa.string()),
        pa.field(SCOPE, pa.string(), nullable=False),
        pa.field(CONTENT_HASH, pa.string()),
        pa.field(STATUS, pa.string(), nullable=False),
        pa.field(CHUNK_COUNT, pa.int64()),
        pa.field(LAST_INDEXED, pa.timestamp("us", tz="UTC")),
        pa.field(LAST_ERROR, pa.string()),
        pa.field(ADDED_AT, pa.timestamp("us", tz="UTC")),
        pa.field(OPTIONS, pa.string()),
        pa.field(ISSUES, pa.string()),
        pa.field(LOADED_HASH, pa.string()),
    ]
)

DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field(SOURCE_ID, pa.string(), nullable=False),
        pa.field(UNIT_HASH, pa.string(), nullable=False),
        pa.field(UNIT_KEY, pa.string(), nullable=False),
        pa.field(FILE_HASH, pa.string()),
        pa.field(CONTENT_KIND, pa.string(), nullable=False),
        pa.field(LANGUAGE, pa.string()),
        pa.field(TITLE, pa.string()),
        pa.field(TEXT, pa.string(), nullable=False),
        pa.field(LOCATOR, LOCATOR_TYPE),
        pa.field(LAYOUT, pa.string()),
    ]
)

_CHUNK_FIELDS = [
    pa.field(CHUNK_ID, pa.string(), nullable=False),
    pa.field(CHUNK_HASH, pa.string(), nullable=False),
    pa.field(SOURCE_ID, pa.string(), nullable=False),
    pa.field(SOURCE_TYPE, pa.string(), nullable=False),
    pa.field(SCOPE, pa.string(), nullable=False),
    pa.field(UNIT_HASH, pa.string(), nullable=False),
    pa.field(CONTENT_KIND, pa.string(), nullable=False),
    pa.field(POSITION, pa.int64(), nullable=False),
    pa.field(TITLE, pa.string()),
    pa.field(URI, pa.string()),
    pa.field(CONTENT_HASH, pa.string()),
    pa.field(TEXT, pa.string(), nullable=False),
    pa.field(LOCATOR, LOCATOR_TYPE),
    pa.field(CHUNKER, pa.string()),
    pa.field(ROW_HASH, pa.string(), nullable=False),
    pa.field(CONTEXT, pa.string()),
    pa.field(EMBED_HASH, pa.string()),
]
CHUNKS_SCHEMA = pa.schema(_CHUNK_FIELDS)
#: Chunk columns a search hit carries (everything but bookkeeping).
HIT_COLUMNS = tuple(f.name for f in _CHUNK_FIELDS if f.name not in (UNIT_HASH, CHUNKER, ROW_HASH, CONTEXT, EMBED_HASH))

EMBEDDINGS_SCHEMA = pa.schema(
    [
        # the hash of the text embedded: a chunk's ``embed_hash`` (its header and text; its ``chunk_hash`` when it
        # has no header)
        pa.field(CHUNK_HASH, pa.string(), nullable=False),
        pa.field(MODEL_ID, pa.string(), nullable=False),
        # variable length: one table holds the vectors of models of any dimension
        pa.field(VECTOR, pa.list_(pa.float32()), nullable=False),
    ]
)


def search_schema(dim: int) -> pa.Schema:
    """The search table: every chunk column, the hit payload and the active model's fixed-size vector.

    The ``hit`` column repeats what a search hit needs besides its text
    (:data:`HIT_COLUMNS`) as one JSON string: fetching a hit then reads two
    columns instead of ten (the locator struct alone is one column per field),
    about 3x faster per query.
    """
    return pa.schema(
        [
            *_CHUNK_FIELDS,
            pa.field(SEARCH_TEXT, pa.string(), nullable=False),
            pa.field(SEARCH_NAMES, pa.string(), nullable=False),
            pa.field(SYMBOL_NAME, pa.string()),
            pa.field(HIT, pa.string(), nullable=False),
            pa.field(VECTOR, pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


def hit_json(row: dict) -> str:
    """The ``hit`` value of a chunk row: its :data:`HIT_COLUMNS` but the text, null locator fields left out."""
    out = {k: row[k] for k in HIT_COLUMNS if k not in (TEXT, LOCATOR)}
    out[LOCATOR] = {k: v for k, v in (row[LOCATOR] or {}).items() if v is not None}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


# eval_runs: one row per configuration evaluated on a dataset (kbflow.evaluate.runs)
RUN_ID = "run_id"
DATASET = "dataset"
SPLIT = "split"
CORPUS_HASH = "corpus_hash"
LAKE_VERSION = "lake_version"
LAKE_TAG = "lake_tag"
CONFIG = "config"
METRICS = "metrics"
LATENCY_MS = "latency_ms"
QUERIES = "queries"
PER_QUERY = "per_query"
TOP_DOCS = "top_docs"
CREATED_AT = "created_at"
#: metric -> its flat column in eval_runs (SQL- and polars-friendly names)
METRIC_COLUMNS = {
    "ndcg@10": "ndcg_10",
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "mrr@10": "mrr_10",
    # added later: null in runs stored before
    "recall@5": "recall_5",
    "hit_rate@3": "hit_rate_3",
    "hit_rate@5": "hit_rate_5",
}
_FIRST_METRICS = ("ndcg_10", "recall_10", "recall_100", "mrr_10")

EVAL_RUNS_SCHEMA = pa.schema(
    [
        pa.field(RUN_ID, pa.string(), nullable=False),
        pa.field(DATASET, pa.string(), nullable=False),
        pa.field(SPLIT, pa.string(), nullable=False),
        pa.field(CORPUS_HASH, pa.string(), nullable=False),
        pa.field(LAKE_VERSION, pa.int64(), nullable=False),  # the search-table version measured
        pa.field(LAKE_TAG, pa.string()),
        pa.field(CONFIG, pa.string(), nullable=False),  # JSON: mode and every other setting
        pa.field(MODE, pa.string(), nullable=False),
        *(pa.field(col, pa.float64(), nullable=col not in _FIRST_METRICS) for col in METRIC_COLUMNS.values()),
        pa.field("latency_p50_ms", pa.float64(), nullable=False),
        pa.field("latency_p95_ms", pa.float64(), nullable=False),
        pa.field(QUERIES, pa.int64(), nullable=False),
        pa.field(PER_QUERY, pa.string(), nullable=False),  # JSON: {query id: {metric: score}}
        pa.field(TOP_DOCS, pa.string(), nullable=False),  # JSON: {query id: [doc ids, best first, top 10]}
        pa.field(CREATED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

# query_log: one row per search from a user-facing surface (kbflow.usage); citation_log: one row per
# chunk put in front of a model; api_keys: the keys `kbflow serve` accepts (kbflow.usage.keys)
QUERY_LOG = "query_log"
CITATION_LOG = "citation_log"
API_KEYS = "api_keys"
QUERY_ID = "query_id"
LOGGED_AT = "logged_at"
QUERY = "query"
ORIGIN = "origin"
CALLER = "caller"
FILTERS = "filters"
RESULTS = "results"
TOP_SCORE = "top_score"
CONFIDENCE = "confidence"
SEARCH_VERSION = "search_version"
CITATION_ID = "citation_id"
TURN_ID = "turn_id"
CITATION = "citation"
KEY_ID = "key_id"
KEY_HASH = "key_hash"
ROLE = "role"
NAME = "name"
REVOKED_AT = "revoked_at"
#: where a search came from (the query log's ``origin``)
ORIGINS = ("python", "notebook", "cli", "rest", "mcp", "web")

QUERY_LOG_SCHEMA = pa.schema(
    [
        pa.field(QUERY_ID, pa.string(), nullable=False),
        pa.field(LOGGED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(QUERY, pa.string(), nullable=False),
        pa.field(ORIGIN, pa.string(), nullable=False),
        pa.field(CALLER, pa.string()),  # an API key id, or what the caller passed
        pa.field(SCOPE, pa.string()),
        pa.field(FILTERS, pa.string()),  # JSON: kinds, source_types, source_ids (only those set)
        pa.field(MODE, pa.string(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        pa.field(RESULTS, pa.int32(), nullable=False),
        pa.field(TOP_SCORE, pa.float64()),
        pa.field(CONFIDENCE, pa.float64()),  # Hits.confidence: the best hit's calibrated relevance
        pa.field(LATENCY_MS, pa.float64(), nullable=False),
        pa.field(SEARCH_VERSION, pa.int64(), nullable=False),
        pa.field(LAKE_TAG, pa.string()),
    ]
)

CITATION_LOG_SCHEMA = pa.schema(
    [
        pa.field(CITATION_ID, pa.string(), nullable=False),
        pa.field(LOGGED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(CHUNK_ID, pa.string(), nullable=False),
        pa.field(CHUNK_HASH, pa.string()),  # the cited text's hash as it was put in front of the model
        pa.field(SOURCE_ID, pa.string(), nullable=False),
        pa.field(QUERY_ID, pa.string()),  # the query_log row whose hits these were
        pa.field(TURN_ID, pa.string()),
        pa.field(ORIGIN, pa.string(), nullable=False),
        pa.field(CALLER, pa.string()),
        pa.field(CITATION, pa.string(), nullable=False),  # JSON: Citation.to_dict()
        pa.field(TEXT, pa.string(), nullable=False),  # the text as cited, kept when the source changes
    ]
)

API_KEYS_SCHEMA = pa.schema(
    [
        pa.field(KEY_ID, pa.string(), nullable=False),
        pa.field(NAME, pa.string()),
        pa.field(KEY_HASH, pa.string(), nullable=False),  # sha256 of the secret; the secret is never stored
        pa.field(SCOPE, pa.string(), nullable=False),
        pa.field(ROLE, pa.string(), nullable=False),
        pa.field(CREATED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(REVOKED_AT, pa.timestamp("us", tz="UTC")),
    ]
)

# claims (kbflow.claims): ``claim_events`` is the append-only history and the source of truth; ``claims`` is
# each claim's current state folded from it (repaired from the events on open); ``claim_audit`` one row per write
CLAIMS = "claims"
CLAIM_EVENTS = "claim_events"
CLAIM_AUDIT = "claim_audit"
CLAIM_ID = "claim_id"
EVENT_N = "n"  # the event's number: 1, 2, ... over the whole lake, in commit order
SEQ = "seq"  # the event's number within its claim
EVENT = "event"
OUTCOME = "outcome"
FROM_STATUS = "from_status"
TO_STATUS = "to_status"
ACTOR_TYPE = "actor_type"
ACTOR_ID = "actor_id"
REASON = "reason"
EVIDENCE = "evidence"
DATA = "data"
AT = "at"
DOMAIN = "domain"
TAGS = "tags"
SUPERSEDES = "supersedes"
SUPERSEDED_BY = "superseded_by"
EVIDENCE_KINDS = "evidence_kinds"
EVIDENCE_COUNT = "evidence_count"
EVIDENCE_STALE = "evidence_stale"
STALE = "stale"
UPDATED_AT = "updated_at"
VALID_FROM, VALID_TO = "valid_from", "valid_to"  # when a claim holds in the world (kbflow.claims.periods)

CLAIMS_SCHEMA = pa.schema(
    [
        pa.field(CLAIM_ID, pa.string(), nullable=False),
        pa.field(TEXT, pa.string(), nullable=False),
        pa.field(STATUS, pa.string(), nullable=False),
        pa.field(CONFIDENCE, pa.float64(), nullable=False),
        pa.field(SCOPE, pa.string(), nullable=False),
        pa.field(DOMAIN, pa.string()),
        pa.field(TAGS, pa.list_(pa.string()), nullable=False),
        pa.field(ACTOR_TYPE, pa.string(), nullable=False),  # who learned it
        pa.field(ACTOR_ID, pa.string(), nullable=False),
        pa.field(CREATED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(UPDATED_AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(EVIDENCE, pa.string(), nullable=False),  # JSON: [Evidence.to_dict()]
        pa.field(EVIDENCE_KINDS, pa.list_(pa.string()), nullable=False),
        pa.field(SUPERSEDES, pa.string()),
        pa.field(SUPERSEDED_BY, pa.string()),
        pa.field(EVIDENCE_STALE, pa.bool_(), nullable=False),
        pa.field(STALE, pa.string()),  # JSON: [{evidence, chunk_id, reason, old_text, new_text}] while stale
        pa.field(VALID_FROM, pa.date32()),  # null: open (claims of an older kbflow have none)
        pa.field(VALID_TO, pa.date32()),
        pa.field(SEQ, pa.int32(), nullable=False),  # the claim's events folded into this row
        pa.field(EVENT_N, pa.int64(), nullable=False),  # the last of them
        pa.field(MODEL_ID, pa.string(), nullable=False),  # the model of ``vector`` (recall)
        pa.field(VECTOR, pa.list_(pa.float32()), nullable=False),
    ]
)

CLAIM_EVENTS_SCHEMA = pa.schema(
    [
        pa.field(EVENT_N, pa.int64(), nullable=False),
        pa.field(CLAIM_ID, pa.string(), nullable=False),
        pa.field(SEQ, pa.int32(), nullable=False),
        pa.field(EVENT, pa.string(), nullable=False),  # learn, observe, verify, dispute, supersede, ...
        pa.field(OUTCOME, pa.string(), nullable=False),  # applied, or refused (the reason says why)
        pa.field(FROM_STATUS, pa.string()),
        pa.field(TO_STATUS, pa.string()),
        pa.field(ACTOR_TYPE, pa.string(), nullable=False),
        pa.field(ACTOR_ID, pa.string(), nullable=False),
        pa.field(REASON, pa.string()),
        pa.field(EVIDENCE, pa.string(), nullable=False),  # JSON: the evidence this event added
        pa.field(DATA, pa.string(), nullable=False),  # JSON: the claim's fields (learn), links, staleness
        pa.field(AT, pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

CLAIM_AUDIT_SCHEMA = pa.schema(
    [
        pa.field(EVENT_N, pa.int64(), nullable=False),
        pa.field(AT, pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field(EVENT, pa.string(), nullable=False),
        pa.field(OUTCOME, pa.string(), nullable=False),
        pa.field(CLAIM_ID, pa.string(), nullable=False),
        pa.field(STATUS, pa.string()),  # the claim's status after the event
        pa.field(EVIDENCE_COUNT, pa.int32(), nullable=False),  # the claim's evidence after the event
        pa.field(EVIDENCE_KINDS, pa.list_(pa.string()), nullable=False),
        pa.field(SCOPE, pa.string(), nullable=False),
        pa.field(ACTOR_TYPE, pa.string(), nullable=False),
        pa.field(ACTOR_ID, pa.string(), nullable=False),
    ]
)

CALIBRATION = "calibration"
INTERCEPT, SLOPE, THRESHOLD, PROBES, NULL_MEDIAN = "intercept", "slope", "threshold", "probes", "null_median"
CALIBRATION_SCHEMA = pa.schema(
    [pa.field(SEARCH_VERSION, pa.int64(), nullable=False), pa.field(MODEL_ID, pa.string(), nullable=False)]
    + [pa.field(name, pa.float64(), nullable=False) for name in (INTERCEPT, SLOPE, THRESHOLD)]
    + [pa.field(PROBES, pa.int32(), nullable=False), pa.field(NULL_MEDIAN, pa.float64(), nullable=False)]
    + [pa.field(CREATED_AT, pa.timestamp("us", tz="UTC"), nullable=False)]
)

#: each table's key: no two rows share it (the ``keys_unique`` check; every ingest repairs duplicates first)
KEYS: dict[str, tuple[str, ...]] = {
    SOURCES: (SOURCE_ID,),
    DOCUMENTS: (SOURCE_ID, UNIT_HASH),
    CHUNKS: (CHUNK_ID,),
    EMBEDDINGS: (CHUNK_HASH, MODEL_ID),
    SEARCH: (CHUNK_ID,),
    EVAL_RUNS: (RUN_ID,),
}

SCHEMAS: dict[str, pa.Schema] = {
    SOURCES: SOURCES_SCHEMA,
    DOCUMENTS: DOCUMENTS_SCHEMA,
    CHUNKS: CHUNKS_SCHEMA,
    EMBEDDINGS: EMBEDDINGS_SCHEMA,
    EVAL_RUNS: EVAL_RUNS_SCHEMA,
    QUERY_LOG: QUERY_LOG_SCHEMA,
    CITATION_LOG: CITATION_LOG_SCHEMA,
    API_KEYS: API_KEYS_SCHEMA,
    CLAIMS: CLAIMS_SCHEMA,
    CLAIM_EVENTS: CLAIM_EVENTS_SCHEMA,
    CLAIM_AUDIT: CLAIM_AUDIT_SCHEMA,
    CALIBRATION: CALIBRATION_SCHEMA,
}

#: Table-level metadata key on the search table naming the model its vectors came from.
SEARCH_MODEL_META = b"kbflow.model_id"
#: Table-level metadata key on the search table: how its ``search_text`` was made (a table made otherwise is
#: rebuilt by the next sync)
SEARCH_TEXT_META = b"kbflow.search_text"
