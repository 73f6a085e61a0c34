"""How likely a hit is a real match: a calibrated relevance from its cosine similarity.

The fused score orders one result list and says nothing across queries (the
best hit of any query scores near the sum of the leg weights). The raw
cosine similarity of query and chunk does: questions the lake answers meet
their best chunk well above questions about things it does not hold. A
:class:`Calibration` turns it into a probability-like ``relevance`` in
``[0, 1]`` (a logistic curve), fitted per embedding model by
``bench/calibrate.py`` on judged questions with an answer in the lake and on
questions without one (about packages and topics the lake does not hold).

``Hits.confidence`` is the best relevance of a result list; below
:data:`LOW_CONFIDENCE` the list is flagged as "no good match"
(``Hits.low_confidence``). The keyword leg's BM25 scores were no help here
(their scale moves with the corpus and the query), so the curve reads the
cosine alone; a ``bm25``-mode search, which embeds no query, has none.

Each lake moves the curve to its own corpus. How well a question the lake
cannot answer still matches it depends on the corpus: long prose pages meet
any question at a higher cosine than short code snippets, a site about one
topic lower than a mixed archive. So after every ingest that changes the
search table, the everyday questions of :mod:`kbflow.retrieve.probes` are
searched in the lake (dense leg, best hit each), and the curve's midpoint is
set at :data:`NULL_MARGIN` above the median of their best cosines
(:func:`lake_curve`), keeping the model's slope. The result is stored with the
index: one row of the lake's ``calibration`` table per search-table version
(:func:`calibrate_lake`, :func:`stored_curve`); a lake without one (written
before, or by a model with no built-in curve) uses the model's curve.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kbflow._lazy import require
from kbflow.lake.sql import sql_str
from kbflow.records import LOW_CONFIDENCE

if TYPE_CHECKING:
    from kbflow.lake.lake import Lake

__all__ = [
    "CALIBRATIONS",
    "LOW_CONFIDENCE",
    "NULL_MARGIN",
    "Calibration",
    "built_in",
    "calibrate_lake",
    "calibration_for",
    "lake_curve",
    "stored_curve",
]


@dataclass(frozen=True)
class Calibration:
    """``relevance = 1 / (1 + exp(-(intercept + slope * cosine)))`` for one embedding model."""

    intercept: float
    slope: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.intercept) and math.isfinite(self.slope)) or self.slope <= 0:
            raise ValueError(f"a calibration needs a finite intercept and a positive slope, got {self}")

    def relevance(self, cosine: float) -> float:
        """The relevance of a hit whose cosine similarity to the query is ``cosine``."""
        z = self.intercept + self.slope * cosine
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    @property
    def threshold(self) -> float:
        """The cosine at which relevance is :data:`LOW_CONFIDENCE` (0.5)."""
        return -self.intercept / self.slope


#: built-in calibrations by model id, fitted by ``python bench/calibrate.py`` (2026-11-23: 625 answered
#: questions of bench/codesearch, bench/pdfpages, Cranfield and CoSQA against 345 questions whose answer
#: is not in the lake; flagged below cosine 0.459, the flag's precision 0.977, recall on those 0.962)
CALIBRATIONS: dict[str, Calibration] = {
    "sentence-transformers/all-MiniLM-L6-v2": Calibration(intercept=-9.687, slope=21.114),
}


def built_in(model_id: str) -> Calibration | None:
    """The built-in curve of ``model_id``'s model, whatever runs it: int8 vectors (``...#onnx-int8.3``) stay
    within 0.995 cosine of fp32 ones, well inside the curve's own error."""
    base, sep, _ = model_id.rpartition("#")
    return CALIBRATIONS.get(base if sep else model_id)


def calibration_for(
    model_id: str, override: tuple[float, float] | None = None, stored: Calibration | None = None
) -> Calibration | None:
    """The calibration of ``model_id``: ``override`` (``(intercept, slope)`` from the settings), else the lake's
    own (``stored``, see :func:`stored_curve`), else the built-in one; ``None`` for a model nobody calibrated."""
    if override is not None:
        return Calibration(*override)
    return stored if stored is not None else built_in(model_id)


#: how far above the median best cosine of the probe questions a lake's curve has its midpoint
#: (fitted by ``bench/calibrate.py --lakes``; see docs/python.md, "How good is a match")
NULL_MARGIN = 0.24
#: the midpoint never leaves this range, whatever the probes meet
THRESHOLD_RANGE = (0.25, 0.6)


def lake_curve(base: Calibration, null: Sequence[float]) -> Calibration:
    """``base`` moved so its midpoint is :data:`NULL_MARGIN` above the median of ``null`` (the best cosines of
    the probe questions in one lake), within :data:`THRESHOLD_RANGE`."""
    low, high = THRESHOLD_RANGE
    threshold = min(max(statistics.median(null) + NULL_MARGIN, low), high)
    return Calibration(intercept=round(-base.slope * threshold, 4), slope=base.slope)


def stored_curve(lake: Lake, model_id: str, version: int) -> Calibration | None:
    """The curve stored for version ``version`` of the lake's search table with ``model_id`` (``None``: none)."""
    from kbflow import schema as S  # pyarrow: not at import the retriever imports this module

    if not lake.has_table(S.CALIBRATION):
        return None
    where = f"{S.SEARCH_VERSION} = {int(version)} AND {S.MODEL_ID} = {sql_str(model_id)}"
    rows = lake.scan(S.CALIBRATION, [S.INTERCEPT, S.SLOPE], where).to_pylist()
    return Calibration(rows[-1][S.INTERCEPT], rows[-1][S.SLOPE]) if rows else None


def calibrate_lake(lake: Lake, retriever: Any) -> dict[str, Any] | None:
    """Fit and store the curve of the search-table version ``retriever`` reads (see the module docs); the row
    stored, or ``None`` where the model has no built-in curve to move or the version has one already."""
    from kbflow import schema as S
    from kbflow.retrieve.probes import PROBES

    base = built_in(retriever.model_id)
    if base is None or not retriever.rows or stored_curve(lake, retriever.model_id, retriever.version):
        return None
    found = retriever.search_many(list(PROBES), k=1, mode="dense", distinct=False, symbol_first=False)
    null = [hits[0].dense_score for hits in found if hits and hits[0].dense_score is not None]
    if len(null) < len(PROBES) // 2:
        return None
    curve = lake_curve(base, null)
    row = {
        S.SEARCH_VERSION: retriever.version,
        S.MODEL_ID: retriever.model_id,
        S.INTERCEPT: curve.intercept,
        S.SLOPE: curve.slope,
        S.THRESHOLD: curve.threshold,
        S.PROBES: len(null),
        S.NULL_MEDIAN: statistics.median(null),
        S.CREATED_AT: datetime.now(UTC),
    }
    table = require("pyarrow").Table.from_pylist([row], schema=S.CALIBRATION_SCHEMA)
    lake.append(S.CALIBRATION, table.to_reader())
    return row
