"""JSON decoded into text a table can hold: no lone UTF-16 halves.

JSON may escape half of a surrogate pair on its own (``"\\ud83d"``, an emoji
cut in two by the exporter). Python decodes it to a lone surrogate, which is
no character: UTF-8 cannot encode it, so one such string failed the write of
a whole source. :func:`loads` decodes JSON with every lone half as U+FFFD,
one character for one, so character offsets into the decoded text stay
where they were and a citation re-read through the same function matches.
"""

from __future__ import annotations

import json
from typing import Any

from kbflow.text.terms import LONE_HALF

__all__ = ["loads", "whole_characters"]


def whole_characters(value: Any) -> Any:
    """``value`` (a string, or the lists and dicts JSON decodes to) with each lone UTF-16 half as U+FFFD."""
    if isinstance(value, str):
        return LONE_HALF.sub("\ufffd", value) if LONE_HALF.search(value) else value
    if isinstance(value, list):
        return [whole_characters(v) for v in value]
    if isinstance(value, dict):
        return {whole_characters(k): whole_characters(v) for k, v in value.items()}
    return value


def loads(text: str) -> Any:
    """:func:`json.loads`, then :func:`whole_characters` where the text holds an escape (only escapes make
    lone halves: a decoded file has none); raises :class:`json.JSONDecodeError` as ``json.loads`` does."""
    value = json.loads(text)
    return whole_characters(value) if "\\u" in text else value
