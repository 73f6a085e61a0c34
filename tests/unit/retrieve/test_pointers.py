from kbflow.retrieve.pointers import demote, pointer_only


def _row(text: str, heading_path: str = "Struct Keys", kind: str = "web") -> dict:
    return {"text": text, "content_kind": kind, "locator": {"url": "struct.Keys.html", "heading_path": heading_path}}


BLANKET = _row(
    "### impl<T> Borrow<T> for T\n\nwhere T: ?Sized,\n\nMembers documented on Borrow: borrow.",
    "Struct Keys > Blanket Implementations > impl<T> Borrow<T> for T",
)


def test_a_chunk_of_pointer_lines_and_bounds_is_a_pointer():
    assert pointer_only(BLANKET)
    # the rest of a long list of names, cut from its pointer line into a chunk of its own
    assert pointer_only(_row("sorted, sorted_by, k_smallest, partition_map,\n\nminmax, minmax_by."))
    # an implementation with no member of its own: its heading and its bounds
    impl = "Struct Keys > Auto Trait Implementations > impl<'a, K, V> UnwindSafe for Keys<'a, K, V>"
    assert pointer_only(_row("### impl<'a, K, V> UnwindSafe for Keys<'a, K, V>\n\nwhere K: RefUnwindSafe,", impl))
    assert pointer_only(_row("## Inherited members\n\nInherited from Command: name, help."))


def test_a_members_own_text_is_never_a_pointer():
    sig = "Struct Keys > pub fn len(&self) -> usize"
    assert not pointer_only(_row("#### pub fn len(&self) -> usize", sig))  # undocumented: its heading alone
    assert not pointer_only(_row("#### pub fn len(&self) -> usize\n\nThe number of keys.", sig))
    # a copied line beside the type's own text
    assert not pointer_only(_row("The type of the elements.\n\nMembers documented on Iterator: next, count."))
    assert not pointer_only(_row("where clauses bound a generic type", "Guide > Generics"))
    assert not pointer_only(_row("where T: Ord,", "Guide > Generics"))  # bounds under no implementation
    assert not pointer_only(_row("Inherited from Command: name, help.", kind="doc"))  # only web pages have them


def test_a_pointer_ranks_a_share_below_the_pages_own_text():
    rows = {
        "blanket": BLANKET,
        "own": _row("#### pub fn get<Q>(&self, key: &Q) -> Option<&V>\n\nLook up a borrowed key."),
        "far": _row("#### pub fn iter(&self) -> Iter<'_, K, V>\n\nAn iterator."),
    }
    read = lambda cids: {c: rows[c] for c in cids}  # noqa: E731
    fused = [("blanket", 1.0), ("own", 0.9), ("far", 0.2)]
    # 0.3 of the span (1.0) taken from the pointer: 0.7, below "own", above "far"
    assert demote(fused, 5, read, 0.3) == ([("own", 0.9), ("blanket", 0.7), ("far", 0.2)], {"blanket"})
    assert demote(fused, 5, read, 0.0) == (fused, set())  # the role signal off: as fused, no pointer judged
    # a pointer far ahead of everything else keeps its place
    assert demote([("blanket", 1.0), ("far", 0.2)], 5, read, 0.3)[0][0][0] == "blanket"


def test_only_the_first_candidates_are_read():
    seen = []

    def read(cids):
        seen.extend(cids)
        return {c: _row("prose, not a pointer at all") for c in cids}

    fused = [(f"c{i}", 1.0 - i / 100) for i in range(50)]
    assert demote(fused, 5, read, 0.3) == (fused, set())
    assert seen == [f"c{i}" for i in range(20)]  # max(2k, 20)
