from dataclasses import replace

from kbflow.chunk.base import chunk_unit, count_tokens, line_span
from kbflow.chunk.code import code_segments
from kbflow.chunk.document import document_spans, split_span
from kbflow.chunk.lines import line_windows
from kbflow.config import ChunkSettings
from kbflow.records import Locator, RawUnit

MD = """# Guide

Intro paragraph.

## Install

### From source

Clone it. Then build it.

```sh
# not a heading
make
```

Setext title
------------

Body text.
"""


def test_heading_paths_and_offsets():
    spans = document_spans(MD, budget=200)
    paths = [p for _, _, p in spans]
    assert paths == ["Guide", "Guide > Install > From source", "Guide > Setext title"]
    # the bare "## Install" heading joined the next section; the fenced '#' is no heading
    start, end, _ = spans[1]
    assert MD[start:end].startswith("## Install\n\n### From source") and "# not a heading" in MD[start:end]


def test_budget_respected_and_never_mid_word():
    words = " ".join(f"word{i}" for i in range(400)) + ". End of it."
    spans = split_span(words, 0, len(words), budget=50)
    assert len(spans) > 1
    for s, e in spans:
        assert count_tokens(words[s:e]) <= 50
        assert (s == 0 or words[s - 1] == " ") and (e == len(words) or words[e] in " .")


def _sentences(n: int, tag: str) -> str:
    return " ".join(f"{tag} sentence number {i} says something about wings." for i in range(n))


def test_a_small_piece_joins_its_neighbour_within_the_whole_budget():
    # a record: a short title paragraph over a body too long to stay whole: the title is no chunk of its own
    title = "Vibration isolation of aircraft power plants."
    text = f"{title}\n\n{_sentences(30, 'body')}"
    spans = document_spans(text, budget=200, markdown=False, whole=240, small=24)
    assert len(spans) >= 2 and text[spans[0][0] : spans[0][1]].startswith(f"{title}\n\nbody sentence number 0")
    assert all(count_tokens(text[s:e]) >= 24 and count_tokens(text[s:e]) <= 240 for s, e, _ in spans)
    # without ``small`` the title stands alone, as before
    before = document_spans(text, budget=200, markdown=False, whole=240)
    assert text[before[0][0] : before[0][1]] == title and len(before) == len(spans) + 1
    # a last sentence left over by the packing joins the chunk before it
    tail = f"{_sentences(17, 'long')} Short end."
    packed = document_spans(tail, budget=200, markdown=False, whole=240, small=24)
    assert text_of(tail, packed[-1]).endswith("Short end.") and count_tokens(text_of(tail, packed[-1])) >= 24


def test_a_small_piece_stays_where_joining_it_would_pass_the_whole_budget():
    text = f"Title.\n\n{_sentences(40, 'body')}"
    spans = document_spans(text, budget=200, markdown=False, whole=200, small=24)
    assert text[spans[0][0] : spans[0][1]] == "Title."  # 200 tokens of body left no room
    assert all(count_tokens(text[s:e]) <= 200 for s, e, _ in spans)


TYPEDOC = """# Class Command

## Methods

### action

action(fn): this

Register a callback to run when the command is invoked.

#### Parameters

fn: (...args: any[]) => void

#### Returns this

### alias

alias(alias): this

#### Returns Command
"""


def test_a_bare_heading_with_nothing_below_it_closes_the_section_above():
    # TypeDoc's "Returns this" ends the entry of `action`: it joins that entry, not the next member's; a last
    # heading with nothing below it joins the section above instead of standing alone as a chunk
    spans = document_spans(TYPEDOC, budget=200)
    paths = [p for _, _, p in spans]
    assert paths == [
        "Class Command > Methods > action",
        "Class Command > Methods > action > Parameters",
        "Class Command > Methods > alias",
    ]
    assert text_of(TYPEDOC, spans[1]).endswith("#### Returns this")
    assert text_of(TYPEDOC, spans[2]) == "### alias\n\nalias(alias): this\n\n#### Returns Command"
    # a bare heading with its subsections below it still opens the next section
    assert text_of(TYPEDOC, spans[0]).startswith("# Class Command\n\n## Methods\n\n### action")
    assert [p for _, _, p in document_spans("# Only a title\n", budget=200)] == ["Only a title"]


def text_of(text: str, span: tuple[int, int, str]) -> str:
    return text[span[0] : span[1]]


def test_document_chunks_resolve_to_their_offsets():
    unit = RawUnit("s", "g.md", MD, "doc", Locator(kind="doc", path="g.md"), language="markdown")
    chunks = chunk_unit(unit, ChunkSettings(max_tokens=16, min_tokens=0))
    assert len(chunks) >= 3
    for c in chunks:
        assert MD[c.locator.char_start : c.locator.char_end] == c.text
    assert [c.position for c in chunks] == list(range(len(chunks)))


PY = '''"""Module doc."""

import os

CONSTANT = 1


# A helper that adds.
@decorator
def add(a, b):
    return a + b


class Store:
    """A store."""

    size = 3

    def get(self, key):
        return key

    async def put(self, key, value):
        pass


if __name__ == "__main__":
    add(1, 2)
'''


def test_python_units_symbols_and_comments():
    segs = code_segments(PY, "python", budget=400)
    by_symbol = {s[2]: s for s in segs}
    assert by_symbol["add"][:2] == (8, 11)  # the comment and decorator stay with the function
    assert by_symbol["Store"][3] == "module/class_definition:Store"
    # module-level code between and after the units is kept
    covered = {n for s, e, _, _ in segs for n in range(s, e + 1)}
    lines = PY.split("\n")
    assert all(i + 1 in covered for i, line in enumerate(lines) if line.strip())


def test_oversized_class_splits_at_methods():
    segs = code_segments(PY, "python", budget=20)
    symbols = [s[2] for s in segs]
    assert "Store.get" in symbols and "Store.put" in symbols
    paths = {s[2]: s[3] for s in segs}
    assert paths["Store.get"] == "module/class_definition:Store/function_definition:get"
    # spans never overlap and are in order
    for (_s1, e1, *_), (s2, _e2, *_) in zip(segs, segs[1:]):
        assert e1 < s2


def test_javascript_units():
    js = (
        "// util\nexport function add(a, b) { return a + b; }\nconst mul = (a, b) => a * b;\n"
        "const K = 3;\nclass Foo {\n  m() { return 1; }\n}\n"
    )
    segs = code_segments(js, "javascript", budget=400)
    symbols = {s[2]: (s[0], s[1]) for s in segs}
    assert symbols["add"] == (1, 2) and symbols["mul"] == (3, 3) and symbols["Foo"] == (5, 7)


def test_code_chunks_equal_their_line_spans():
    unit = RawUnit("s", "m.py", PY, "code", Locator(kind="code", path="m.py"), language="python")
    for c in chunk_unit(unit, ChunkSettings(code_max_tokens=20)):
        assert line_span(PY, c.locator.line_start, c.locator.line_end) == c.text


def test_line_window_fallback():
    text = "\n".join(f"key{i} = {i}" for i in range(100)) + "\n"
    unit = RawUnit("s", "c.toml", text, "code", Locator(kind="code", path="c.toml"), language=None)
    chunks = chunk_unit(unit, ChunkSettings(window_lines=40))
    assert [(c.locator.line_start, c.locator.line_end) for c in chunks] == [(1, 40), (41, 80), (81, 100)]
    assert all(c.locator.symbol is None for c in chunks)
    assert line_windows(["", "a", "", "b", ""], 1, 5, 10, 100) == [(2, 4)]


def test_chunk_ids_stable_across_edits_elsewhere():
    unit = RawUnit("s", "m.py", PY, "code", Locator(kind="code", path="m.py"), language="python")
    edited = RawUnit(
        "s", "m.py", "# new first line\n" + PY, "code", Locator(kind="code", path="m.py"), language="python"
    )
    before = {c.text: c.chunk_id for c in chunk_unit(unit)}
    after = {c.text: c.chunk_id for c in chunk_unit(edited)}
    same = set(before) & set(after)
    assert same and all(before[t] == after[t] for t in same)


def test_token_estimate():
    assert count_tokens("hello, world") == 3
    assert count_tokens("internationalization") == 3  # long words cost more


def test_functions_defined_under_if_and_try_are_units():
    from kbflow.chunk.code import code_segments

    text = (
        "import os\n\n"
        "if hasattr(os, 'statvfs'):\n"
        "    def disk_usage(path):\n        st = os.statvfs(path)\n        return st.f_blocks\n"
        "else:\n"
        "    def disk_usage(path):\n        raise NotImplementedError(path)\n\n"
        "try:\n    from _fast import speedup\nexcept ImportError:\n"
        "    def speedup(x):\n        return x\n\n"
        "if DEBUG:\n    LEVEL = 10\n"
    )
    segs = code_segments(text, "python", budget=400, min_tokens=0)
    assert [s[2] for s in segs].count("disk_usage") == 2 and "speedup" in [s[2] for s in segs]
    # an `if` holding no definition stays plain code
    assert any(s[2] is None and "LEVEL = 10" in "\n".join(text.split("\n")[s[0] - 1 : s[1]]) for s in segs)


def test_small_plain_code_joins_a_neighbour():
    """A banner comment or a lone import is not a chunk of its own: it joins the function below it (or the
    chunk above, at the end of a block); a tiny function stays a unit."""
    from kbflow.chunk.code import code_segments

    text = (
        "import os\n\n\n"
        "# -------------------------------------------- Helpers --------------------------------------------\n\n"
        "def helper(a):\n    return os.path.join(a, 'x')\n\n\n"
        "def tiny():\n    pass\n\n\n"
        "VERSION = '1.0'\n"
    )
    spans = {s[2]: (s[0], s[1]) for s in code_segments(text, "python", budget=400, min_tokens=24)}
    assert spans["helper"] == (1, 7)  # the import and the banner joined it
    assert spans["tiny"] == (10, 14)  # and the trailing constant joined the last chunk
    assert None not in spans
    alone = code_segments(text, "python", budget=400, min_tokens=0)
    assert [s[2] for s in alone] == [None, "helper", "tiny", None]


def test_code_context_names_what_a_part_belongs_to():
    """A piece of a split function carries its signature; a split class's body is labelled as such; the
    module docstring and the comments above it are one chunk."""
    from kbflow.chunk.code import cut_code

    body = "\n".join(f"        total = total + compute_value({i}, weight={i}, name='item{i}')" for i in range(30))
    text = (
        "# Copyright notice\n"
        '"""The store module.\n\nIt keeps things."""\n\n'
        "class Store(Base):\n"
        '    """A store of things, kept by key, with a long docstring that says a great deal about them."""\n\n'
        "    kind = 'store'\n    limit = 100\n\n"
        "    def get(self, key):\n        return self.items[key]\n\n"
        "    def total(self, items,\n              weight=1):\n        total = 0\n" + body + "\n        return total\n"
    )
    segs = cut_code(text, "python", budget=120, min_tokens=8)
    assert segs[0].line_start == 1 and segs[0].context == "(the module's docstring)" and segs[0].symbol is None
    store = [s for s in segs if s.symbol == "Store"]
    assert store and store[0].context == "(class body without its methods)"
    parts = [s for s in segs if s.symbol == "Store.total"]
    assert len(parts) > 1 and parts[0].context is None  # the first part shows the signature itself
    assert all(p.context == "def total(self, items, weight=1):" for p in parts[1:])


def test_the_context_header_of_code_chunks():
    from kbflow.chunk.base import chunk_unit

    body = "\n".join(f"    x{i} = compute_value({i}, weight={i}, name='item{i}')" for i in range(40))
    text = f"def long_function(a, b):\n{body}\n    return a\n"
    unit = RawUnit("tools", "pkg/m.py", text, "code", Locator(kind="code", path="pkg/m.py"), language="python")
    chunks = chunk_unit(unit, ChunkSettings(code_max_tokens=120))
    assert len(chunks) > 1
    # the source's id names the package whose files are named alone (uuid's dist/validate.js)
    assert chunks[0].context == "tools/pkg/m.py — long_function"
    assert chunks[1].context == "tools/pkg/m.py — long_function\ndef long_function(a, b):"
    assert all(line_span(text, c.locator.line_start, c.locator.line_end) == c.text for c in chunks)
    # a path that starts with the source's id already names it once
    named = RawUnit("pkg", "pkg/m.py", text, "code", Locator(kind="code", path="pkg/m.py"), language="python")
    assert chunk_unit(named, ChunkSettings(code_max_tokens=120))[0].context == "pkg/m.py — long_function"
    # a camelCase symbol is also said in words, as the model reads words
    js = "function minVersion(range) {\n  return range.set[0]\n}\n"
    camel = RawUnit(
        "semver", "ranges/min.js", js, "code", Locator(kind="code", path="ranges/min.js"), language="javascript"
    )
    assert chunk_unit(camel, ChunkSettings())[0].context == "semver/ranges/min.js — minVersion (min version)"


def _record(words: int) -> RawUnit:
    text = "Title of the record\n\n" + " ".join(f"word{i % 50}" for i in range(words)) + "."
    return RawUnit("s", "r1", text, "record", Locator(kind="record", record_id="r1"), title="Title of the record")


def test_a_record_the_model_reads_whole_stays_one_chunk():
    settings = ChunkSettings()  # max_tokens 200: a section up to 240 stays whole
    assert settings.whole_budget == 240
    fits = _record(220)  # one estimated token a word: about 225 in all
    assert 200 < count_tokens(fits.text) <= 240
    (chunk,) = chunk_unit(fits, settings)
    assert chunk.text == fits.text.strip()
    # over the whole budget: packed under max_tokens, the title (under min_tokens) joined to the first piece
    long = _record(300)
    pieces = chunk_unit(long, settings)
    assert len(pieces) >= 2 and pieces[0].text.startswith("Title of the record\n\nword0")
    assert all(count_tokens(c.text) <= 240 for c in pieces)
    assert all(count_tokens(c.text) <= 200 for c in chunk_unit(long, replace(settings, min_tokens=0))[1:])
    # whole_tokens = max_tokens splits at the budget
    split = chunk_unit(fits, ChunkSettings(whole_tokens=200))
    assert len(split) >= 2 and all(count_tokens(c.text) <= 200 for c in split)


def test_whole_tokens_is_validated_and_named_in_the_fingerprint():
    import pytest

    from kbflow.errors import ConfigError

    with pytest.raises(ConfigError, match="whole_tokens"):
        ChunkSettings(max_tokens=200, whole_tokens=100)
    assert ChunkSettings(max_tokens=64).whole_budget == 77
    assert ChunkSettings().fingerprint() != ChunkSettings(whole_tokens=200).fingerprint()


def _doc(name: str, text: str, language: str) -> RawUnit:
    return RawUnit("s", name, text, "doc", Locator(kind="doc", path=name, char_start=0, char_end=len(text)),
                   language=language)  # fmt: skip


def _tiles(unit: RawUnit, chunks) -> bool:
    """Every chunk's text is its locator's span of the unit, and no word is lost."""
    spans_ok = all(unit.text[c.locator.char_start : c.locator.char_end] == c.text for c in chunks)
    return spans_ok and " ".join(c.text for c in chunks).split() == unit.text.split()


def test_data_nested_deeper_than_the_stack_is_chunked_not_crashed(caplog):
    """5,000 nested JSON lists, and YAML nested 300 levels (tree-sitter-yaml 0.7 segfaults near 255: such a
    file is cut as text, never parsed; if that guard broke, this test would crash the run)."""
    from kbflow.chunk.structured import MAX_KEY_DEPTH, _too_deep_to_parse

    lists = _doc("deep.json", "[" * 5000 + "1" + "]" * 5000, "json")
    chunks = chunk_unit(lists)
    assert chunks and _tiles(lists, chunks)
    assert max(len((c.locator.heading_path or "").split(" > ")) for c in chunks) <= MAX_KEY_DEPTH
    yaml = _doc("deep.yaml", "".join("  " * i + f"key{i}:\n" for i in range(300)) + "  " * 300 + "value\n", "yaml")
    assert _too_deep_to_parse(yaml.text, "yaml") and not _too_deep_to_parse("a:\n  b: 1\n", "yaml")
    assert _too_deep_to_parse("- " * 300 + "x\n", "yaml")
    chunks = chunk_unit(yaml)
    assert chunks and _tiles(yaml, chunks)
    assert "deep.yaml: YAML nested too deep for its grammar to parse safely; cut as text" in caplog.text


def test_a_chunker_that_recurses_too_deep_hands_the_unit_to_the_next(monkeypatch, caplog):
    from kbflow.chunk import document, structured

    def too_deep(self, unit):
        raise RecursionError("maximum recursion depth exceeded")

    text = '{"pump": {"prime": "with water"}, "valves": ["grease", "every", "spring"]}\n' * 60
    unit = _doc("c.json", text, "json")
    monkeypatch.setattr(structured.StructuredChunker, "pieces", too_deep)
    chunks = chunk_unit(unit)  # the document chunker's paragraphs
    assert len(chunks) > 1 and _tiles(unit, chunks)
    assert "c.json: nested deeper than the structured chunker walks; cut by the next one" in caplog.text

    def spans_too_deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(document, "document_spans", spans_too_deep)
    chunks = chunk_unit(unit)  # cut at line ends, under the budget
    assert "c.json: nested too deep for its headings and paragraphs; cut at line ends" in caplog.text
    assert len(chunks) > 1 and _tiles(unit, chunks)
    assert all(count_tokens(c.text) <= ChunkSettings().max_tokens for c in chunks)


def test_front_matter_titles_the_document_and_an_h1_takes_its_place():
    text = '---\ntitle: "Getting started"\nsidebar_position: 2\n---\n\nInstall it first.\n\n## Install\n\nRun pip.\n'
    spans = document_spans(text, budget=200, whole=240)
    assert [p for _, _, p in spans] == ["Getting started", "Getting started > Install"]
    assert text[spans[0][0] : spans[0][1]].startswith("---\ntitle:")  # the text stays the source's
    toml = '+++\ntitle = "Hugo page"\ndraft = false\n+++\n\nBody.\n\n## Sub\n\nMore words.\n'
    assert [p for _, _, p in document_spans(toml, budget=200, whole=240)] == ["Hugo page", "Hugo page > Sub"]
    titled = "---\ntitle: Guide\n---\n\n# Real title\n\nBody.\n\n## Sub\n\nMore.\n"
    assert [p for _, _, p in document_spans(titled, budget=200, whole=240)] == ["Real title", "Real title > Sub"]
    # no title: a paragraph of its own; not at the very start, or never closed: no front matter
    assert [p for _, _, p in document_spans("---\nlayout: post\n---\n\n## A\n\nBody.\n", budget=200)] == ["", "A"]
    assert [p for _, _, p in document_spans("Intro\n\n---\ntitle: x\n---\n", budget=200)] == [""]
    assert [p for _, _, p in document_spans("---\ntitle: x\n\nno end\n", budget=200)] == [""]
