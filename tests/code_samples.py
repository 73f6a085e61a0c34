"""One sample file per code language kbflow cuts with tree-sitter: (file name, text, symbols it must give,
the first line of the chunk of each symbol that has a leading comment)."""

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
