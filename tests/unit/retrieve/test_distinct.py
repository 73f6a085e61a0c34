"""Each text once in a result list (kbflow.retrieve.distinct), copies listed on the hit."""

from __future__ import annotations

import json
import shutil

from kbflow import Retriever, pipeline
from kbflow.lake import Lake
from kbflow.records import Hit, Source
from kbflow.retrieve.distinct import (
    MIN_COPY_BODY,
    continues_entry,
    copy_key,
    distinct,
    entry_key,
    member_path,
    text_key,
)


def _reader(texts: dict[str, str], places: dict[str, str]):
    reads: list[list[str]] = []

    def read(cids):
        reads.append(list(cids))
        return {c: {"text": texts[c], "uri": "/s", "locator": {"path": places[c]}, "position": 0} for c in cids}

    return read, reads


def test_equal_texts_are_one_hit_kept_by_the_shortest_place():
    fused = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6), ("e", 0.5)]
    texts = {"a": "same  text\n", "b": "other", "c": "same text", "d": "third", "e": " same\ttext"}
    places = {"a": "archive/2023/x.md", "b": "y.md", "c": "x.md", "d": "z.md", "e": "vendor/x.md"}
    read, _ = _reader(texts, places)
    out = distinct(fused, 3, read)
    assert out.fused == [("c", 0.9), ("b", 0.8), ("d", 0.6)]  # the group's best position, its shortest place
    assert out.also_in == {"c": ["a", "e"]}
    assert text_key("a  b\n") == text_key("a b") != text_key("ab")


def test_the_copy_nearest_the_start_of_its_document_shows_the_group():
    # a chapter against the print page that repeats every chapter: the print page's path is shorter
    def read(cids):
        rows = {
            "print": {"text": "t", "uri": "/site", "locator": {"path": "print.html"}, "position": 212},
            "chapter": {"text": "t", "uri": "/site", "locator": {"path": "behavior.html"}, "position": 3},
        }
        return {c: rows[c] for c in cids}

    out = distinct([("print", 0.9), ("chapter", 0.8)], 1, read)
    assert out.fused == [("chapter", 0.9)] and out.also_in == {"chapter": ["print"]}


def test_the_window_grows_until_k_distinct_texts_are_found():
    fused = [(f"c{i}", 1.0 - i / 1000) for i in range(200)]
    texts = {cid: ("dup" if i < 150 else f"text {i}") for i, (cid, _) in enumerate(fused)}
    read, reads = _reader(texts, {cid: cid for cid, _ in fused})
    out = distinct(fused, 5, read)
    assert len(out.fused) == 5 and len({texts[c] for c, _ in out.fused}) == 5
    assert [len(r) for r in reads] == [20, 40, 80, 60]  # windows of max(2k, 20), doubling, up to the end
    assert len(out.also_in[out.fused[0][0]]) == 149
    assert distinct(fused[:3], 5, read).fused == [("c0", 1.0)]  # fewer distinct texts than k: all of them


def test_a_search_shows_each_text_once_and_lists_the_copies(tmp_path, fast_settings, docs_dir):
    copies = tmp_path / "mirror" / "archive" / "2023"
    copies.mkdir(parents=True)
    shutil.copy(docs_dir / "guide.md", copies / "guide.md")
    (docs_dir / "old").mkdir()
    shutil.copy(docs_dir / "guide.md", docs_dir / "old" / "guide.md")
    lake = Lake(fast_settings.lake)
    lake.register(Source("docs", "docs", str(docs_dir)))
    lake.register(Source("mirror", "docs", str(tmp_path / "mirror")))
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake.uri)

    hits = r.search("reciprocal rank fusion", k=4)
    texts = [" ".join(h.text.split()) for h in hits]
    assert len(texts) == len(set(texts))
    fusion = next(h for h in hits if "reciprocal rank fusion" in h.text)
    assert fusion.citation.locator.path == "guide.md" and fusion.citation.source_id == "docs"
    assert sorted((c.source_id, c.locator.path) for c in fusion.also_in) == [
        ("docs", "old/guide.md"),
        ("mirror", "archive/2023/guide.md"),
    ]
    again = Hit.from_dict(json.loads(json.dumps(fusion.to_dict())))  # JSON, REST and the Client keep them
    assert again.also_in == fusion.also_in

    plain = r.search("reciprocal rank fusion", k=4, distinct=False)
    assert sum("reciprocal rank fusion" in h.text for h in plain) == 3 and not any(h.also_in for h in plain)
    assert [h.chunk_id for h in r.search("reciprocal rank fusion", k=2)] == [h.chunk_id for h in hits[:2]]


def test_the_page_and_the_cli_name_the_other_places():
    from kbflow.cli.search import hit_places
    from kbflow.records import Citation, Locator
    from kbflow.service.web.pages import _also_in

    def cite(source: str, path: str) -> Citation:
        return Citation(source, "docs", f"/{source}", Locator("doc", path=path, heading_path="Install <b>"))

    hit = Hit(
        1,
        1.0,
        "c",
        "t",
        cite("docs", "guide.md"),
        "doc",
        "global",
        also_in=(cite("docs", "old/guide.md"), cite("mirror", "guide.md")),
    )
    assert hit_places(hit) == "old/guide.md § Install <b>; guide.md § Install <b> [mirror]"
    html = _also_in(hit)
    assert "also in: old/guide.md § Install &lt;b&gt;" in html and "<b>" not in html
    assert _also_in(Hit(1, 1.0, "c", "t", cite("docs", "a.md"), "doc", "global")) == ""


def test_a_web_member_documented_again_under_each_types_heading_is_one_hit():
    """An API reference's copies differ in their headings only (the owning type's name): one hit, the others
    in ``also_in``; a short body, another source, or a document that is not a web page keeps them apart."""
    body = "Checks if the elements of this iterator are sorted, comparing each pair with its partial order."
    assert len(body) >= MIN_COPY_BODY
    texts = {
        "keys": f"### impl Iterator for Keys\n\n#### fn is_sorted(self) -> bool\n\n{body}",
        "values": f"### impl Iterator for Values\n\n#### fn is_sorted(self) -> bool\n\n{body}",
        "own": "#### pub fn sort_keys(&mut self)\n\nSort the map's key-value pairs by the keys' default order.",
    }

    def read(cids):
        page = {"uri": "/site", "position": 1, "content_kind": "web", "source_id": "docs"}
        return {c: {**page, "text": texts[c], "locator": {"path": f"{c}.html"}} for c in cids}

    out = distinct([("keys", 0.9), ("values", 0.8), ("own", 0.7)], 3, read)
    assert [cid for cid, _ in out.fused] == ["keys", "own"] and out.also_in == {"keys": ["values"]}
    row = {"text": texts["keys"], "content_kind": "web", "source_id": "docs"}
    assert copy_key(row) == copy_key({**row, "text": texts["values"]})
    assert copy_key(row) != copy_key({**row, "text": texts["values"], "source_id": "other"})
    assert copy_key({**row, "content_kind": "doc"}) != copy_key({**row, "text": texts["values"], "content_kind": "doc"})
    short = {"text": "## Linux\n\nRun make install.", "content_kind": "web", "source_id": "docs"}
    assert copy_key(short) != copy_key({**short, "text": "## macOS\n\nRun make install."})


def test_a_members_overloads_on_one_page_are_one_entry():
    def row(path: str, text: str = "text", url: str = "https://x/StringUtils.html", kind: str = "web") -> dict:
        locator = {"url": url, "heading_path": path}
        return {
            "text": text,
            "uri": "https://x",
            "locator": locator,
            "position": 0,
            "content_kind": kind,
            "source_id": "lang3",
        }

    member = "StringUtils > Method Details > abbreviate"
    rows = {
        "a1": row(member, "public static String abbreviate(String str, int maxWidth)"),
        "x": row("StringUtils > Method Details > capitalize", "public static String capitalize(String str)"),
        "a2": row(member, "public static String abbreviate(String str, int offset, int maxWidth)"),
        "other_page": row(member, "public static String abbreviate(String s)", url="https://x/WordUtils.html"),
        "ex1": row("Class Command > Methods > action > Example", "program.action(fn)"),
        "ex2": row("Class Command > Methods > parseAsync > Example", "await program.parseAsync()"),
        "prose1": row("Guide > Installing the tool", "Run the installer."),
        "prose2": row("Guide > Installing the tool", "Then restart."),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 8, lambda cids: {c: rows[c] for c in cids})
    assert [cid for cid, _ in out.fused] == ["a1", "x", "other_page", "ex1", "ex2", "prose1", "prose2"]
    assert out.also_in == {"a1": ["a2"]}  # another page's member, two members' examples, prose: kept apart
    assert entry_key(rows["a1"]) == entry_key(rows["a2"]) != entry_key(rows["other_page"])
    assert entry_key(rows["ex1"]) != entry_key(rows["ex2"])
    assert entry_key(rows["prose1"]) is None and entry_key({**rows["a1"], "content_kind": "code"}) is None
    assert entry_key(row("abbreviate")) is None  # a page's title alone names no member of it


def _web_row(source: str, url: str, heading_path: str, text: str, position: int) -> dict:
    """A web chunk's search row, as :func:`distinct` reads it."""
    return {
        "text": text,
        "uri": "https://x",
        "locator": {"url": url, "heading_path": heading_path},
        "position": position,
        "content_kind": "web",
        "source_id": source,
    }


def test_an_entry_is_shown_by_a_chunk_that_starts_a_section_not_by_the_tail_of_the_overload_above():
    """Javadoc heads each overload of ``copyFile`` ``copyFile``; a long overload is cut into chunks, and the
    exceptions closing the first one stand before the second's signature. The entry is shown by a signature."""

    def row(text: str, position: int, member: str = "copyFile") -> dict:
        return _web_row("io", "FileUtils.html", f"FileUtils > Method Detail > {member}", text, position)

    rows = {
        "third": row("#### copyFile\n\npublic static long copyFile(File input, OutputStream output)", 50),
        "second": row("#### copyFile\n\npublic static void copyFile(File srcFile, File destFile)", 48),
        "tail": row("java.io.IOException - if source or destination is invalid.", 45),
        "tail_only": row("java.io.IOException - if the directory cannot be read.", 60, member="listFiles"),
        "tail_later": row("See Also: listFiles(File, String[], boolean)", 61, member="listFiles"),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    # the first signature on the page, at the best-ranked chunk's place and score; an entry of tails alone: its first
    assert out.fused == [("second", 1.0), ("tail_only", 0.7)]
    assert out.also_in == {"second": ["third", "tail"], "tail_only": ["tail_later"]}
    assert continues_entry(rows["tail"]) and not continues_entry(rows["second"])
    prose = _web_row("io", "guide.html", "Guide > Installing the tool", "Then restart.", 3)
    assert not continues_entry(prose)  # a chunk in no member's entry continues none


def test_a_members_parts_are_its_entry_and_two_members_parts_that_read_the_same_stay_apart():
    def row(path: str, text: str, position: int) -> dict:
        return _web_row("commander", "classes/Command.html", f"Class Command > Methods > {path}", text, position)

    returns = "#### Returns this\n\nthis command for chaining"
    rows = {
        "parse_returns": row("parse > Returns this", returns, 41),
        "parse": row("parse", "### parse\n\nparse(argv?): this\n\nParse argv.", 40),
        "alias_returns": row("alias > Returns this", returns, 3),
        "async_returns": row("parseAsync > Returns Promise<Command>", "#### Returns Promise<Command>", 43),
        "alias": row("alias", "### alias\n\nalias(alias): this\n\nSet an alias.", 2),
        "async": row("parseAsync > Parameters", "#### Parameters\n\nargv: string[]", 42),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    # each entry once, shown by its first chunk, at its best-ranked part's place and score
    assert out.fused == [("parse", 1.0), ("alias", 0.8), ("async", 0.7)]
    assert out.also_in == {"parse": ["parse_returns"], "alias": ["alias_returns"], "async": ["async_returns"]}
    assert entry_key(rows["parse_returns"]) == entry_key(rows["parse"]) != entry_key(rows["alias_returns"])
    # a section's "Examples" under a heading that names no member is no member's part
    prose = {
        **rows["parse"],
        "locator": {"url": "guide.html", "heading_path": "Guide > Installing the tool > Examples"},
    }
    assert entry_key(prose) != entry_key(
        {**prose, "locator": {**prose["locator"], "heading_path": "Guide > Installing the tool"}}
    )


def test_a_docstring_copied_onto_an_override_is_one_hit_and_a_signature_heads_its_entry():
    """pdoc (and Sphinx) head an entry by its signature and copy a method's docstring onto an override that has
    none: the override's copy joins the definition's hit; the entry's "Parameters" part joins its member."""

    def row(path: str, text: str, position: int) -> dict:
        return _web_row("click", "click/core.html", f"click.core > {path}", text, position)

    doc = "Returns all the pieces that go into the usage line and returns it as a list of strings."
    sig = "def collect_usage_pieces(self, ctx: Context) -> list[str]:"
    rows = {
        "group": row(f"class Group(Command): > {sig}", f"### {sig}\n\n{doc}", 90),
        "command": row(f"class Command: > {sig}", f"### {sig}\n\n{doc}", 30),
        "params": row("class Command: > def invoke(self, ctx) > Parameters", "###### Parameters\n\nctx: a context", 41),
        "invoke": row("class Command: > def invoke(self, ctx)", "### def invoke(self, ctx)\n\nRuns the command.", 40),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    # the copy is shown where it is defined (the base class, first on the page), the override in also_in
    assert out.fused == [("command", 1.0), ("invoke", 0.8)]
    assert out.also_in == {"command": ["group"], "invoke": ["params"]}
    entry = ["click.core", "class Command:", "def invoke(self, ctx)"]
    assert member_path("click.core > class Command: > def invoke(self, ctx) > Parameters") == entry
    assert member_path("Guide > Using requests (advanced)") is None
    for prose in ("final thoughts", "new features", "static files"):  # a keyword, then no signature: no member
        assert member_path(f"Blog > {prose}") is None
    assert member_path("JSDoc: Class: Argument > Methods > argOptional() → {Argument}") is not None  # JSDoc's
    assert member_path("click.core > class CliRunner (charset: str = 'utf-8')") is not None  # pdoc3's
    assert member_path("Developer Interface > requests.request(method, url, **kwargs)") is not None


def test_a_generic_members_heading_names_it_and_its_example_joins_its_entry():
    """rustdoc heads a generic method by its declaration, generic parameters and all (``fn tuple_windows<T>(self)
    -> TupleWindows<Self, T>``), and cuts its long entry into chunks: the example below the signature is the same
    entry's, one hit shown by the signature."""
    sig = "fn tuple_windows<T>(self) -> TupleWindows<Self, T>"
    path = f"Trait Itertools > Provided Methods > {sig}"
    rows = {
        "example": _web_row("it", "trait.Itertools.html", path, "let it = (1..5).tuple_windows();", 41),
        "other": _web_row(
            "it", "trait.Itertools.html", "Trait Itertools > Provided Methods > fn tuples<T>(self)", "## x", 50
        ),
        "signature": _web_row(
            "it", "trait.Itertools.html", path, f"#### {sig}\n\nReturn an iterator over windows.", 40
        ),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    assert out.fused == [("signature", 1.0), ("other", 0.9)]
    assert out.also_in == {"signature": ["example"]}
    for heading in (
        "pub fn retain<F>(&mut self, keep: F)",  # rustdoc, an inherent method
        "pub const fn with_hasher(hash_builder: S) -> Self",  # a const fn
        "pub unsafe fn get_unchecked<I>(&self, index: I) -> &I::Output",
        "map<U>(fn: (value: T) => U): U[]",  # TypeDoc's signature
    ):
        assert member_path(f"Struct IndexMap > {heading}") is not None, heading
    for heading in ("impl<K, V> IndexMap<K, V>", "Vec<T>", "Generic <types> (overview)", "const fn"):
        assert member_path(f"Struct IndexMap > {heading}") is None, heading


def test_a_cached_reader_reads_each_chunk_once():
    calls = []

    def read(cids):
        calls.append(list(cids))
        return {c: {"text": c} for c in cids}

    from kbflow.retrieve.distinct import cached

    rows: dict = {}
    reader = cached(read, rows)
    assert reader(["a", "b"]) == {"a": {"text": "a"}, "b": {"text": "b"}}
    assert reader(["b", "c"]) == {"b": {"text": "b"}, "c": {"text": "c"}}
    assert reader(["a"]) == {"a": {"text": "a"}}
    assert calls == [["a", "b"], ["c"]]
    assert sorted(rows) == ["a", "b", "c"]  # what it read, kept for the hits


def test_a_copy_whose_entry_ranked_apart_joins_both_groups_and_a_long_part_is_a_copy_too():
    """pdoc copies ``ParamType.convert``'s docstring, its "Parameters" part included, onto each override: an
    override's part ranked first made a group of its entry, and its copy of the docstring then joined that group
    and not the definition's, so one text showed five times in a top 5."""

    def row(owner: str, part: str, text: str, position: int) -> dict:
        sig = "def convert(self, value, param, ctx) -> Any:"
        path = f"click.types > class {owner}: > {sig}" + (f" > {part}" if part else "")
        return _web_row("click", "click/types.html", path, text, position)

    doc = "### def convert(self, value, param, ctx) -> Any:\n\n" + "Convert the value to the correct type. " * 4
    params = "###### Parameters\n\nvalue: The value to convert. param: The parameter that is using this type."
    rows = {
        "file_params": row("File(ParamType)", "Parameters", params, 90),
        "base": row("ParamType", "", doc, 10),
        "file": row("File(ParamType)", "", doc, 89),
        "base_params": row("ParamType", "Parameters", params, 11),
        "other": _web_row(
            "click", "click/core.html", "click.core > class Option:", "### class Option:\n\nAn option.", 5
        ),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    assert out.fused == [("base", 1.0), ("other", 0.6)]  # one hit for the entry and its copies, shown where defined
    assert sorted(out.also_in["base"]) == ["base_params", "file", "file_params"]


def test_a_page_that_documents_one_member_is_its_entry_and_its_parts_join_it():
    """TypeDoc gives each function a page of its own, titled by it (``Function combineReducers``), its parts headed
    below the title: on redux's reference one function's page took three places of a top 5."""

    def row(path: str, text: str, position: int) -> dict:
        return _web_row("redux", "functions/combineReducers.html", path, text, position)

    rows = {
        "params": row("Function combineReducers > Parameters", "#### Parameters\n\nreducers: M", 2),
        "title": row("Function combineReducers", "# Function combineReducers\n\nTurns reducers into one.", 0),
        "returns": row("Function combineReducers > Returns M", "#### Returns M\n\nA reducer.", 3),
        "other": _web_row("redux", "functions/compose.html", "Function compose", "# Function compose\n\nComposes.", 0),
        "param": row("Function combineReducers > Param: reducers", "#### Param: reducers\n\nAn object.", 4),
    }
    fused = [(cid, 1.0 - i / 10) for i, cid in enumerate(rows)]
    out = distinct(fused, 5, lambda cids: {c: rows[c] for c in cids})
    assert out.fused == [("title", 1.0), ("other", 0.7)]
    assert sorted(out.also_in["title"]) == ["param", "params", "returns"]
    assert member_path("Function combineReducers > Parameters") == ["Function combineReducers"]
    assert member_path("Interface Store<S, A> > Methods > subscribe") is not None  # a member of the page's type
    assert member_path("Getting Started > Returns and refunds") is None  # a guide's title names no member
