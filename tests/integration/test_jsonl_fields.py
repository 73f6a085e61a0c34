"""JSONL record sets written with other keys than BEIR's: named once at add, read, cited and resolved by them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kbflow import Lake
from kbflow.chunk.base import chunk_unit
from kbflow.cli import main
from kbflow.errors import ConfigError, SourceError
from kbflow.pipeline import register_source
from kbflow.records import Citation, Source
from kbflow.retrieve.resolver import resolve, resolve_many
from kbflow.sources.base import get_loader
from kbflow.sources.files import file_hash
from kbflow.sources.jsonl import RecordFields

RECORDS = [
    {"doc_id": "a1", "headline": "Wing flutter", "abstract": "Flutter of swept wings at transonic speed."},
    {"doc_id": 7, "abstract": "Boundary layer transition on cones.", "text": 3},
    {"id": "x", "abstract": "a record without the id"},
    {"doc_id": "a3", "headline": "", "abstract": ""},
    {"doc_id": "a4", "headline": "Shock tubes", "abstract": ["First sentence.", "Second sentence."]},
    {"doc_id": "a5", "abstract": ["a sentence", 7]},
]
FIELDS = {"id": "doc_id", "title": "headline", "text": "abstract"}


@pytest.fixture
def pubs(tmp_path):
    path = tmp_path / "pubs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def test_fields_are_read_from_a_mapping_or_a_spec_and_written_into_the_locator():
    assert RecordFields.of("id=doc_id, text=abstract") == RecordFields(id="doc_id", text="abstract")
    assert RecordFields.of(FIELDS).to_option() == FIELDS
    assert RecordFields.of({"id": "_id"}).to_option() == {}
    fields = RecordFields.of(FIELDS)
    assert fields.locator_field(True) == "doc_id:headline+abstract" and fields.locator_field(False) == "doc_id:abstract"
    assert RecordFields.of_locator("doc_id:headline+abstract") == fields
    # BEIR's locators read as before
    assert RecordFields.of_locator("title+text") == RecordFields() == RecordFields.of_locator("text")
    assert RecordFields().locator_field(True) == "title+text"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("doc_id", "write them as id=KEY,title=KEY,text=KEY"),
        ({"body": "abstract"}, "name only id, title, text"),
        ({"text": "a+b"}, "text='a+b' is not a record key"),
        ({"id": ""}, "id='' is not a record key"),
    ],
)
def test_bad_fields_say_what_is_wrong(spec, message):
    with pytest.raises(ConfigError, match=message.replace("+", r"\+")):
        RecordFields.of(spec)


def test_records_are_read_by_the_named_keys_and_their_citations_resolve(pubs):
    source = Source("pubs", "jsonl", str(pubs), options={"fields": FIELDS})
    loader = get_loader("jsonl")
    units = list(loader.load(source))
    assert [(u.unit_key, u.title, u.text) for u in units] == [
        ("record:a1", "Wing flutter", "Wing flutter\n\nFlutter of swept wings at transonic speed."),
        ("record:7", None, "Boundary layer transition on cones."),
        ("record:a4", "Shock tubes", "Shock tubes\n\nFirst sentence.\nSecond sentence."),  # SciFact's lists
    ]
    reasons = {i.path: i.reason for i in loader.issues}
    assert 'record has no "doc_id" (its keys: "id", "abstract")' in reasons["pubs.jsonl:3"]
    assert reasons["pubs.jsonl:4"] == 'record \'a3\' has no text (empty "headline" and "abstract")'
    assert reasons["pubs.jsonl:6"] == '"abstract" must be a string or a list of strings, "headline" a string'
    chunks = [c for u in units for c in chunk_unit(u)]
    citations = [Citation("pubs", "jsonl", str(pubs), c.locator) for c in chunks]
    assert [c.locator.field for c in chunks] == [
        "doc_id:headline+abstract",
        "doc_id:abstract",
        "doc_id:headline+abstract",
    ]
    assert [resolve(c) for c in citations] == [c.text for c in chunks] == resolve_many(citations)


def test_the_fields_are_part_of_the_fingerprint_only_where_they_differ_from_beir(pubs):
    loader = get_loader("jsonl")
    plain = loader.fingerprint(Source("pubs", "jsonl", str(pubs)))
    assert plain == file_hash(str(pubs)) == loader.fingerprint(Source("p", "jsonl", str(pubs), options={"fields": {}}))
    assert loader.fingerprint(Source("pubs", "jsonl", str(pubs), options={"fields": FIELDS})) != plain


def test_add_names_the_keys_a_record_has_and_stores_the_fields(tmp_path, pubs):
    lake = Lake(str(tmp_path / "lake"))
    with pytest.raises(SourceError, match=r'pubs.jsonl:1: record has no "_id" \(its keys: "doc_id", "headline"'):
        register_source(lake, str(pubs), "jsonl")
    added = register_source(lake, str(pubs), "jsonl", options={"fields": "id=doc_id,title=headline,text=abstract"})
    assert added.source.options == {"fields": FIELDS}
    with pytest.raises(ConfigError, match="fields .* is for jsonl sources"):
        register_source(lake, str(tmp_path), "docs", options={"fields": FIELDS})
    result = CliRunner().invoke(
        main, ["add", str(pubs), "--type", "jsonl", "--lake", str(tmp_path / "cli"), "--fields", "id=doc_id"]
    )
    assert result.exit_code == 0, result.output
    assert Lake(str(tmp_path / "cli")).sources()[0].options == {"fields": {"id": "doc_id"}}


@pytest.mark.parametrize("text", [json.dumps(RECORDS[:2]), json.dumps(RECORDS[:2], indent=2)])
def test_a_json_array_is_refused_at_add_with_how_to_convert_it(tmp_path, text):
    path = tmp_path / "pubs.json"
    path.write_text(text)
    with pytest.raises(SourceError, match=r"pubs.json:1: a JSON array, not JSON Lines .* jq -c '\.\[\]' FILE"):
        register_source(Lake(str(tmp_path / "lake")), str(path), "jsonl")
    loader = get_loader("jsonl")
    with pytest.raises(SourceError):
        list(loader.load(Source("s", "jsonl", str(path))))
    assert "a JSON array, not JSON Lines" in loader.issues[0].reason
