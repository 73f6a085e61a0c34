"""One search-table version as the retriever reads it: its parts load once, in the background while a first
query is embedded, and a failed background load surfaces in the search that needed it."""

import threading

import pytest

from kbflow.retrieve import signals
from kbflow.retrieve.retriever import Retriever
from kbflow.retrieve.table import SearchTable


def _loaders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kbflow-load-")]


def test_warm_loads_the_vectors_and_groups_in_threads_once(ingested, fast_settings):
    r = Retriever.open(ingested.uri, settings=fast_settings)
    table = SearchTable(r.table.dataset, fast_settings)
    assert table.exact and table._exact_index is None and table._groups is None
    table.warm(groups=False)
    exact = table.exact_index  # waits for the load in flight, or loads it
    assert table._groups is None  # not asked for
    table.warm(groups=True)
    groups = table.groups
    for thread in _loaders():
        thread.join()
    table.warm(groups=True)  # everything is loaded: no thread starts
    assert not _loaders()
    assert table.exact_index is exact and table.groups is groups
    assert exact.chunk_ids.to_pylist() == r.table.exact_index.chunk_ids.to_pylist()
    assert groups.rows.tolist() == r.table.groups.rows.tolist()


def test_a_first_search_ranks_as_a_warm_one(ingested, fast_settings):
    cold = Retriever.open(ingested.uri, settings=fast_settings)
    first = [h.chunk_id for h in cold.search("install the widget", k=5)]
    assert cold.table._exact_index is not None and cold.table._groups is not None
    again = [h.chunk_id for h in cold.search("install the widget", k=5)]
    assert first == again and first


def test_a_failed_background_load_is_raised_by_the_search_that_needs_it(ingested, fast_settings, monkeypatch):
    def broken(ds):
        raise OSError("the disk went away")

    monkeypatch.setattr(signals.Groups, "load", staticmethod(broken))
    r = Retriever.open(ingested.uri, settings=fast_settings)
    with pytest.raises(OSError, match="the disk went away"):
        r.search("install the widget", k=5)
    assert r.table._groups is None
    monkeypatch.undo()
    assert r.search("install the widget", k=5)  # the next search loads them


def test_a_rows_vectors_read_alike_from_memory_and_from_the_table_and_records_are_judged_prose(ingested, fast_settings):
    import numpy as np

    r = Retriever.open(ingested.uri, settings=fast_settings)
    memory = SearchTable(r.table.dataset, fast_settings)
    stored = SearchTable(r.table.dataset, fast_settings)
    stored.exact = False  # as a table past exact_max_rows with an ANN index reads them
    rows = memory.exact_index.row_ids.tolist()[::2]
    a, b = memory.vectors_of(rows), stored.vectors_of(rows)
    assert a.shape == b.shape == (len(rows), a.shape[1])
    unit = b / np.linalg.norm(b, axis=1, keepdims=True)
    assert np.allclose(a, unit, atol=1e-5)
    table = r.table.dataset.to_table(columns=["content_kind"], with_row_id=True)
    kind_of = dict(zip(table.column("_rowid").to_pylist(), table.column("content_kind").to_pylist()))
    assert {"doc", "code", "record"} <= set(kind_of.values())
    every = list(kind_of)
    # the fixture's records are two short sentences of prose; its documents and code are no record set
    assert memory.groups.prose_of(every) == [kind_of[row] == "record" for row in every]


def test_a_name_is_held_where_the_hits_documents_write_it_and_for_code_anywhere_in_its_repository(
    ingested, fast_settings
):
    """``holds(name, within=rows)``: a name one document writes is held for that document's rows, not for
    another document's (a filing that names a competitor does not make a question about it answered); a file
    of code holds what its repository's README writes."""
    r = Retriever.open(ingested.uri, settings=fast_settings)
    table = r.table.dataset.to_table(columns=["source_id", "locator"], with_row_id=True)
    rows: dict[str, list[int]] = {}  # a document's rows, by its path (a record set's: by its source)
    for rid, source, loc in zip(*(table.column(c).to_pylist() for c in ("_rowid", "source_id", "locator"))):
        rows.setdefault(loc["path"] or source, []).append(rid)
    records = rows["recs"]
    assert r.table.holds("Turkey")  # the lake writes it, in a record
    assert r.table.holds("Turkey", within=records)
    assert not r.table.holds("Turkey", within=rows["guide.md"])  # the guide never does
    assert not r.table.holds("Turkey", within=rows["guide.md"] + rows["pkg/fuse.py"])
    # the README writes "Repo": held for the repository's code, not for the guide beside it
    assert r.table.holds("Repo", within=rows["pkg/fuse.py"])
    assert not r.table.holds("Repo", within=rows["guide.md"])
    assert not r.table.holds("Grundfos") and not r.table.holds("Grundfos", within=records)
