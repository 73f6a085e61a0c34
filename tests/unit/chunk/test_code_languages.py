"""tree-sitter units in every supported language; structured data files cut at their keys."""

from __future__ import annotations

import itertools
import json

import pytest

from kbflow.chunk.base import chunk_unit, line_span
from kbflow.chunk.code import code_segments
from kbflow.chunk.grammars import LANGUAGES, available
from kbflow.chunk.structured import data_spans
from kbflow.config import ChunkSettings
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.repo import RepoLoader
from kbflow.text.languages import language_of, language_of_script
from tests.code_samples import SAMPLES


def _covered(text: str, segs) -> None:
    """Every non-blank line lies in exactly one segment, segments in order."""
    lines = text.split("\n")
    seen = [0] * len(lines)
    for start, end, *_ in segs:
        for row in range(start - 1, end):
            seen[row] += 1
    for row, line in enumerate(lines):
        assert seen[row] <= 1, f"line {row + 1} in two chunks"
        if line.strip():
            assert seen[row] == 1, f"line {row + 1} lost: {line!r}"


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_units_symbols_and_leading_comments(language):
    assert available(language), f"grammar for {language} not installed"
    name, text, symbols, leads = SAMPLES[language]
    assert language_of(name) == language
    for budget in (400, 30, 8):  # whole units, split containers, split everything
        segs = code_segments(text, language, budget=budget)
        _covered(text, segs)
    segs = code_segments(text, language, budget=30)
    found = {s[2] for s in segs}
    assert symbols <= found, f"missing {symbols - found}"
    for symbol, first_line in leads.items():
        start = next(s[0] for s in segs if s[2] == symbol)
        assert text.split("\n")[start - 1].strip() == first_line, (symbol, segs)
    if language == "rust":  # attributes stay with their item
        struct = next(s for s in segs if s[2] == "Lake")
        assert "#[derive(Debug, Clone)]" in text.split("\n")[struct[0] - 1 : struct[1]][1]


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_code_chunks_round_trip(language):
    name, text, *_ = SAMPLES[language]
    unit = RawUnit("s", name, text, "code", Locator(kind="code", path=name), language=language)
    chunks = chunk_unit(unit, ChunkSettings(code_max_tokens=30))
    assert len(chunks) > 1
    for c in chunks:
        assert line_span(text, c.locator.line_start, c.locator.line_end) == c.text
        assert c.locator.ast_path


def test_every_language_has_a_sample():
    assert set(SAMPLES) | {"python", "javascript"} == set(LANGUAGES)


def test_shebang_names_the_language():
    assert language_of_script("#!/usr/bin/env python3") == "python"
    assert language_of_script("#!/bin/bash -e") == "bash"
    assert language_of_script("#!/usr/bin/env lua") == "lua"
    assert language_of_script("#!/usr/bin/env node") == "javascript"
    assert language_of_script("#!/usr/bin/perl") is None
    assert language_of_script("no shebang") is None


YAML = """# CI
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Test
        run: make test
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: make lint
"""
TOML = """[project]
name = "kbflow"
version = "0.1.0"
dependencies = ["lancedb", "pylance", "polars"]

# lint settings
[tool.ruff]
line-length = 120
target-version = "py311"

[[tool.mypy.overrides]]
module = "lance.*"
ignore_missing_imports = true
"""
JSON = json.dumps(
    {"name": "kbflow", "scripts": {"test": "pytest", "lint": "ruff check"}, "files": ["a.py", "b.py", "c.py"]},
    indent=2,
)


@pytest.mark.parametrize("language, text", [("yaml", YAML), ("toml", TOML), ("json", JSON)])
def test_data_files_cut_at_keys_tile_the_file(language, text):
    spans = data_spans(text, language, budget=16)
    assert len(spans) > 2
    # in order, non-overlapping, and everything but whitespace is in some chunk
    for (_, e1, _), (s2, _, _) in itertools.pairwise(spans):
        assert e1 <= s2
    covered = "".join(text[s:e] for s, e, _ in spans)
    assert "".join(covered.split()) == "".join(text.split())
    assert data_spans(text, language, budget=1000) == [(0, len(text.rstrip()), "")]


def test_data_key_paths():
    paths = {p for _, _, p in data_spans(YAML, "yaml", budget=16)}
    assert any(p.startswith("jobs > lint") for p in paths)
    assert any(p.startswith("jobs > test") for p in paths)
    toml = data_spans(TOML, "toml", budget=20)
    by_path = {p: TOML[s:e] for s, e, p in toml}
    assert by_path["tool.ruff"].startswith("# lint settings\n[tool.ruff]")
    assert any(p.startswith("tool.mypy.overrides[]") for p in by_path)
    assert any(p.startswith("scripts") for _, _, p in data_spans(JSON, "json", budget=12))


def test_broken_data_file_falls_back_to_paragraphs():
    text = "a: [1, 2\n\nb: {\n" + "x: 1\n" * 40
    spans = data_spans(text, "yaml", budget=20)
    assert spans and all(p == "" for _, _, p in spans)


def test_repo_loader_treats_config_files_as_documents(tmp_path):
    (tmp_path / "pyproject.toml").write_text(TOML)
    (tmp_path / "ci.yml").write_text(YAML)
    (tmp_path / "run").write_text("#!/bin/sh\necho hi\n")
    units = {u.unit_key: u for u in RepoLoader().load(Source("r", "repo", str(tmp_path)))}
    assert units["pyproject.toml"].content_kind == "doc" and units["pyproject.toml"].language == "toml"
    assert units["ci.yml"].language == "yaml"
    assert units["run"].content_kind == "code" and units["run"].language == "bash"
    chunks = chunk_unit(units["pyproject.toml"], ChunkSettings(max_tokens=20, min_tokens=0))
    assert {c.locator.kind for c in chunks} == {"doc"}
    for c in chunks:
        assert TOML[c.locator.char_start : c.locator.char_end] == c.text
    assert "tool.ruff" in {c.locator.heading_path for c in chunks}
