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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CALIBRATIONS", "LOW_CONFIDENCE", "Calibration", "calibration_for"]

#: below this confidence a result list is flagged "no good match"
LOW_CONFIDENCE = 0.5


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


def calibration_for(model_id: str, override: tuple[float, float] | None = None) -> Calibration | None:
    """The calibration of ``model_id``: ``override`` (``(intercept, slope)`` from the settings) or the built-in
    one; ``None`` for a model nobody calibrated."""
    if override is not None:
        return Calibration(*override)
    return CALIBRATIONS.get(model_id)
