"""API references' copied members read as pointers (kbflow.sources.web.members), on pages shaped as rustdoc
writes them."""

from __future__ import annotations

from rustdoc_pages import page as _page

from kbflow.sources.web import extract
from kbflow.sources.web.members import fold_copies
from kbflow.sources.web.tree import parse


def test_a_traits_members_copied_onto_a_type_are_one_pointer_line():
    text = extract(_page()).text
    assert "Members documented on Iterator: next, is_sorted." in text
    assert "Advances the iterator" not in text and "Checks if the elements" not in text
    # the type's own documentation of a trait method is its own: kept whole
    assert "Counts the keys without walking them" in text
    # a blanket implementation is never the type's own: its members are pointers whatever their docs
    assert "Members documented on From: from." in text and "Returns the argument unchanged" not in text
    # the type's own members, its heading and the impl headings stay
    assert "Returns a slice of the remaining keys." in text
    assert "impl<K> Iterator for Keys<K>" in text


def test_the_pointer_lines_blocks_keep_css_paths_that_select_their_element():
    page = extract(_page())
    pointer = next(b for b in page.blocks if page.text[b[0] : b[1]].startswith("Members documented on Iterator"))
    assert pointer[2].startswith("html > body > main > section#main-content > div#trait-implementations-list")
    assert pointer[2].endswith("> details > div")  # the impl block's own list of items


def test_only_rustdocs_pages_are_folded():
    text = extract(_page(generator="Sphinx 7.2")).text
    assert "Advances the iterator" in text and "Members documented on" not in text
    root = parse(_page())[0]
    assert fold_copies(root, "doxygen") == 0
    assert fold_copies(root, "rustdoc") == 2
