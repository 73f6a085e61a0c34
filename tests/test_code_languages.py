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
from kbflow.languages import language_of, language_of_script
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.repo import RepoLoader

SAMPLES = {
    "kotlin": (
        "Lake.kt",
        """package kb.lakes

import java.io.File

/** A lake of tables. */
@Serializable
class Lake(private val uri: String) {
    /** Opens a table. */
    fun open(name: String): Table {
        return Table(uri, name)
    }

    companion object {
        fun create(uri: String): Lake = Lake(uri)
    }
}

object Registry {
    fun get(id: String): Lake? = null
}

fun Lake.describe(): String = "lake"
""",
        {"Lake.open", "Lake.Companion", "Lake.describe", "Lake", "Registry"},
        {"Lake": "/** A lake of tables. */", "Lake.open": "/** Opens a table. */"},
    ),
    "scala": (
        "Lake.scala",
        """package kb.lakes

/** A lake of tables. */
class Lake(uri: String) extends Store {
  private val tables = Map.empty[String, Table]

  /** Opens a table. */
  def open(name: String): Table = {
    new Table(uri, name)
  }
}

object Lake {
  def apply(uri: String): Lake = new Lake(uri)
}

trait Store {
  def put(name: String): Unit
}
""",
        {"Lake.open", "Store", "Lake"},
        {"Lake.open": "/** Opens a table. */"},
    ),
    "swift": (
        "Lake.swift",
        """import Foundation

/// A lake of tables.
public class Lake {
    private let uri: String

    /// Opens a table.
    func open(name: String) -> Table {
        return Table(uri: uri, name: name)
    }

    init(uri: String) {
        self.uri = uri
    }
}

protocol Store {
    func put(name: String)
}

extension Lake: Store {
    func put(name: String) {}
}
""",
        {"Store", "Lake.open", "Lake", "Lake.init", "extension Lake"},
        {"Lake": "/// A lake of tables.", "Lake.open": "/// Opens a table."},
    ),
    "lua": (
        "lake.lua",
        """--- Lakes of tables.
local Lake = {}
Lake.__index = Lake

--- Opens a table.
function Lake.open(uri)
  return setmetatable({uri = uri}, Lake)
end

function Lake:table(name)
  return {lake = self, name = name}
end

local function helper(x)
  return x
end

return Lake
""",
        {"Lake.open", "Lake:table", "helper"},
        {"Lake.open": "--- Opens a table."},
    ),
    "php": (
        "lake.php",
        """<?php
namespace App\\Models;

use App\\Base;

/** A lake of tables. */
class Lake extends Base
{
    private $uri;

    /** Open a table by name. */
    public function open(string $name): Table
    {
        return new Table($this->uri, $name);
    }
}

interface Store
{
    public function get($key);
}

function helper($x)
{
    return $x;
}
""",
        {"Lake", "Lake::open", "Store", "helper"},
        {"Lake": "/** A lake of tables. */", "Lake::open": "/** Open a table by name. */"},
    ),
    "csharp": (
        "Lake.cs",
        """using System;

namespace Kb.Lakes
{
    /// <summary>A lake of tables.</summary>
    [Serializable]
    public class Lake
    {
        private string uri;

        /// <summary>Opens a table.</summary>
        public Table Open(string name)
        {
            return new Table(uri, name);
        }

        public Lake(string uri) { this.uri = uri; }
    }

    public enum Mode { Read, Write }
}
""",
        {"Kb.Lakes", "Kb.Lakes.Lake", "Kb.Lakes.Lake.Open", "Kb.Lakes.Lake.Lake", "Kb.Lakes.Mode"},
        {
            "Kb.Lakes.Lake": "/// <summary>A lake of tables.</summary>",
            "Kb.Lakes.Lake.Open": "/// <summary>Opens a table.</summary>",
        },
    ),
    "typescript": (
        "app.ts",
        """import { Base } from "./base";

/** A lake of tables. */
@Injectable()
export class Lake extends Base {
  private uri: string = "";

  /** Open a table by name. */
  @Memoize()
  open(name: string): Table {
    return new Table(this.uri, name);
  }
}

export interface Options { uri: string }
""",
        {"Lake", "Lake.open", "Options"},
        {"Lake.open": "/** Open a table by name. */"},
    ),
    "tsx": (
        "view.tsx",
        """export function Hits({ hits }: Props) {
  return <ul>{hits.map((h) => <li key={h.id}>{h.text}</li>)}</ul>;
}

const Empty = () => <p>nothing</p>;
""",
        {"Hits", "Empty"},
        {},
    ),
    "go": (
        "lake.go",
        """package lake

// Lake holds the tables.
type Lake struct {
	uri string
}

// Open opens a table.
func (l *Lake) Open(name string) (*Table, error) {
	return &Table{uri: l.uri, name: name}, nil
}

func New(uri string) *Lake { return &Lake{uri: uri} }
""",
        {"Lake", "Lake.Open", "New"},
        {"Lake.Open": "// Open opens a table."},
    ),
    "rust": (
        "lake.rs",
        """use std::fmt;

/// A lake of tables.
#[derive(Debug, Clone)]
pub struct Lake {
    uri: String,
}

impl Lake {
    /// Open a lake.
    pub fn open(uri: &str) -> Self {
        Lake { uri: uri.to_string() }
    }
}

impl fmt::Display for Lake {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.uri)
    }
}
""",
        {"Lake", "impl Lake::open", "impl fmt::Display for Lake::fmt"},
        {"Lake": "/// A lake of tables.", "impl Lake::open": "/// Open a lake."},
    ),
    "java": (
        "Lake.java",
        """package kb;

/** A lake. */
public class Lake {
    private final String uri;

    /** Opens a lake. */
    @Deprecated
    public static Lake open(String uri) {
        return new Lake(uri);
    }

    Lake(String uri) { this.uri = uri; }

    enum Mode { READ, WRITE; boolean writes() { return this == WRITE; } }
}
""",
        {"Lake", "Lake.open", "Lake.Lake", "Lake.Mode"},
        {"Lake.open": "/** Opens a lake. */"},
    ),
    "c": (
        "lake.c",
        """#include <stdlib.h>

/* A lake. */
struct lake {
    const char *uri;
};

/* Open a lake. */
static struct lake *lake_open(const char *uri) {
    struct lake *l = malloc(sizeof *l);
    l->uri = uri;
    return l;
}

#ifdef KB_DEBUG
void lake_dump(struct lake *l) { (void)l; }
#endif
""",
        {"lake", "lake_open", "lake_dump"},
        {"lake_open": "/* Open a lake. */"},
    ),
    "cpp": (
        "lake.cpp",
        """#include <string>

namespace kb {

/// A lake.
class Lake {
 public:
  explicit Lake(std::string uri) : uri_(std::move(uri)) {}
  const std::string& uri() const { return uri_; }
  Lake open(const std::string& name);

 private:
  std::string uri_;
};

Lake Lake::open(const std::string& name) {
  return Lake(uri_ + "/" + name);
}

template <typename T>
T identity(T x) { return x; }

}  // namespace kb
""",
        {"kb::Lake", "kb::Lake::uri", "kb::Lake::open", "kb::identity"},
        {"kb::identity": "template <typename T>"},
    ),
    "ruby": (
        "lake.rb",
        """module Kb
  # A lake.
  class Lake
    attr_reader :uri

    # Opens a table.
    def open(name)
      Table.new(uri, name)
    end

    def self.create(uri)
      new(uri)
    end
  end
end
""",
        {"Kb::Lake#open", "Kb::Lake.create"},
        {"Kb::Lake#open": "# Opens a table."},
    ),
    "bash": (
        "build.sh",
        """#!/usr/bin/env bash
set -euo pipefail

# Build the wheel.
build() {
  python -m build
}

function clean {
  rm -rf dist
}

build
""",
        {"build", "clean"},
        {"build": "# Build the wheel."},
    ),
}


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
