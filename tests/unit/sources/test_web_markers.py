"""Markers beside what they mark (kbflow.sources.web.markers): permalinks, overload counts, source links and line
numbers are markers; the same classes around words are not."""

from kbflow.sources.web.markers import is_marker
from kbflow.sources.web.tree import Node


def _node(tag: str, cls: str, *children: str) -> Node:
    node = Node(tag, {"class": cls}, None, list(children))
    node.size = sum(len(c) for c in children)
    return node


def test_markers_and_words_under_the_same_classes():
    assert is_marker(_node("a", "headerlink", "¶"), ["headerlink"])
    assert is_marker(_node("span", "permalink", "◆ "), ["permalink"])  # Doxygen's
    assert is_marker(_node("span", "overload", "[1/3]"), ["overload"])
    assert is_marker(_node("span", "viewcode-link", "[source]"), ["viewcode-link"])
    assert is_marker(_node("a", "src", "Source"), ["src"])  # rustdoc's
    assert is_marker(_node("label", "view-source-button", "View Source"), ["view-source-button"])  # pdoc's
    assert is_marker(_node("dd", "tag-source", "error.js, line 25"), ["tag-source"])  # JSDoc's
    assert not is_marker(_node("a", "anchor", "An anchor with words"), ["anchor"])
    assert not is_marker(_node("span", "overload", "[in words]"), ["overload"])
    assert not is_marker(_node("span", "overload", "[1/3]"), ["other"])
    assert not is_marker(_node("a", "src", "Source code of the module"), ["src"])
    assert not is_marker(_node("dd", "tag-source", "x" * 300), ["tag-source"])
