"""Tokenization: lower-case words, stop words dropped, a light suffix stemmer."""

import re

STOP_WORDS = frozenset({"a", "an", "and", "are", "as", "for", "in", "is", "of", "on", "or", "the", "to", "with"})
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ingly", "edly", "ing", "ed", "es", "s")


def stem(word):
    """Strip the longest known suffix, keeping at least three letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def tokenize(text):
    """Split text into stemmed, lower-case tokens without stop words."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]
