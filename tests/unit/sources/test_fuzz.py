"""Every loader, fed random bytes, truncated files and mangled structure (Hypothesis): never an uncaught
exception, never a lost good file, every failure one line naming the file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import make_pdf

from kbflow.errors import SourceError
from kbflow.records import Source
from kbflow.sources.base import get_loader

#: a good file of each type, and the name a broken sibling gets
GOOD: dict[str, tuple[str, bytes, str]] = {
    "docs": ("good.md", b"# Valves\n\nValves are greased every spring.\n", "broken.md"),
    "repo": ("good.py", b'def grease(valve):\n    """Grease one valve."""\n    return valve\n', "broken.py"),
    "web": (
        "good.html",
        b"<html><head><title>Pumps</title></head><body><article><h1>Pumps</h1>"
        b"<p>Prime the pump with water before starting it, every time.</p></article></body></html>",
        "broken.html",
    ),
    "ticket": (
        "good.json",
        json.dumps(
            [{"number": 1, "title": "Pump leaks", "body": "Seal is worn.", "comments": [{"id": 5, "body": "Fixed."}]}]
        ).encode(),
        "broken.json",
    ),
    "pdf": ("good.pdf", make_pdf.build(), "broken.pdf"),
}
#: examples per test (``KBFLOW_FUZZ_EXAMPLES=1000`` for a deeper, randomized run by hand)
EXAMPLES = int(os.environ.get("KBFLOW_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="KBFLOW_FUZZ_EXAMPLES" not in os.environ,  # make test: the same examples on every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PDF_SETTINGS = settings(SETTINGS, max_examples=max(1, EXAMPLES * 3 // 8))  # each PDF example runs pdfium, pdfplumber


@st.composite
def mangled(draw, good: bytes) -> bytes:
    """``good`` truncated, with bytes flipped, with a slice repeated or removed, or random bytes."""
    how = draw(st.sampled_from(["random", "truncate", "flip", "splice"]))
    if how == "random":
        return draw(st.binary(max_size=4096))
    if how == "truncate":
        return good[: draw(st.integers(0, max(0, len(good) - 1)))]
    if how == "flip":
        data = bytearray(good)
        for _ in range(draw(st.integers(1, 12))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    start = draw(st.integers(0, len(good)))
    end = draw(st.integers(start, len(good)))
    return good[:start] + draw(st.sampled_from([good[start:end] * 2, b"", draw(st.binary(max_size=64))])) + good[end:]


def _load_beside_a_good_file(kind: str, data: bytes) -> None:
    """Load a folder holding the good file and ``data`` as its broken sibling; check the promises."""
    good_name, good, broken_name = GOOD[kind]
    root = Path(tempfile.mkdtemp(prefix=f"kbflow-fuzz-{kind}-"))
    try:
        (root / good_name).write_bytes(good)
        (root / broken_name).write_bytes(data)
        loader = get_loader(kind)
        units = list(loader.load(Source("fuzz", kind, str(root))))  # never raises: the good file loads
        keys = {u.unit_key.split("#")[0] for u in units}
        assert good_name in keys, (kind, keys, loader.issues)
        for issue in loader.issues:
            assert issue.path.startswith(broken_name), issue  # names the file that failed
            assert "\n" not in issue.reason and issue.reason.strip(), issue  # one line, saying why
        for unit in units:
            assert isinstance(unit.text, str) and unit.locator is not None
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("kind", ["docs", "repo", "web", "ticket"])
def test_text_loaders_survive_mangled_files(kind):
    @SETTINGS
    @given(data=mangled(GOOD[kind][1]))
    def run(data):
        _load_beside_a_good_file(kind, data)

    run()


def test_the_pdf_loader_survives_mangled_files():
    @PDF_SETTINGS
    @given(data=mangled(GOOD["pdf"][1]))
    def run(data):
        _load_beside_a_good_file("pdf", data)

    run()


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@SETTINGS
@given(
    issues=st.lists(
        st.dictionaries(
            st.sampled_from(["number", "title", "body", "comments", "user", "id"]),
            _JSON_VALUES | st.lists(st.dictionaries(st.sampled_from(["id", "body", "user"]), _JSON_VALUES)),
        ),
        max_size=6,
    )
)
def test_ticket_exports_of_any_json_shape_fail_per_post(issues):
    """Structure mangled, not bytes: any JSON shape is either loaded or reported, post by post."""
    _load_beside_a_good_file("ticket", json.dumps(issues).encode())


@SETTINGS
@given(
    lines=st.lists(
        st.one_of(
            st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" ")),
            _JSON_VALUES.map(lambda v: json.dumps(v).encode()),
            st.fixed_dictionaries({"_id": _JSON_VALUES, "text": _JSON_VALUES}).map(lambda v: json.dumps(v).encode()),
        ),
        max_size=12,
    ),
    at=st.integers(0, 12),
)
def test_jsonl_loads_every_good_record_among_bad_lines(lines, at):
    good = [
        json.dumps({"_id": f"good-{i}", "title": "Pumps", "text": f"Record {i} about pumps."}).encode()
        for i in range(3)
    ]
    lines = lines[:at] + good + lines[at:]
    root = Path(tempfile.mkdtemp(prefix="kbflow-fuzz-jsonl-"))
    try:
        path = root / "corpus.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        loader = get_loader("jsonl")
        keys = {u.unit_key for u in loader.load(Source("fuzz", "jsonl", str(path)))}
        assert {f"record:good-{i}" for i in range(3)} <= keys
        for issue in loader.issues:
            assert issue.path.startswith("corpus.jsonl") and "\n" not in issue.reason, issue
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("kind", ["docs", "ticket", "pdf", "web", "jsonl"])
@SETTINGS
@given(data=st.binary(max_size=2048))
def test_a_source_of_one_broken_file_fails_with_one_line_naming_it(kind, data):
    """Alone, a broken file either loads or fails the source with a SourceError naming it, on one line."""
    name = {"docs": "only.md", "ticket": "only.json", "pdf": "only.pdf", "web": "only.html", "jsonl": "only.jsonl"}
    root = Path(tempfile.mkdtemp(prefix=f"kbflow-fuzz-one-{kind}-"))
    try:
        path = root / name[kind]
        path.write_bytes(data)
        loader = get_loader(kind)
        try:
            list(loader.load(Source("fuzz", kind, str(path))))
        except SourceError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc), exc
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_samples_still_load_whole():
    """The fuzzed good files are the real thing: the sample corpus's own files load without an issue."""
    for kind, folder in (("ticket", SAMPLES / "tickets"), ("web", SAMPLES / "web"), ("pdf", SAMPLES / "pdf")):
        loader = get_loader(kind)
        assert list(loader.load(Source("s", kind, str(folder)))) and not loader.issues, (kind, loader.issues)
