"""Frozen, typed records: sources, raw units, chunks, locators and citations (:mod:`.core`), and a search's
hits (:mod:`.hits`)."""

from __future__ import annotations

from kbflow.records.core import LOCATOR_KIND_FIELDS, Chunk, Citation, Locator, RawUnit, Source, StepResult
from kbflow.records.hits import LOW_CONFIDENCE, FlagReason, Hit, Hits

__all__ = [
    "LOCATOR_KIND_FIELDS",
    "LOW_CONFIDENCE",
    "FlagReason",
    "Chunk",
    "Citation",
    "Hit",
    "Hits",
    "Locator",
    "RawUnit",
    "Source",
    "StepResult",
]
