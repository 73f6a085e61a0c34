from kbflow.text.pointers import (
    DOCUMENTED_BELOW,
    DOCUMENTED_ELSEWHERE,
    WITHOUT_DOCUMENTATION,
    documented_on,
    inherited_from,
    is_pointer_line,
    members_of,
    pointer_line,
)


def test_a_pointer_line_names_each_member_once_in_order():
    assert pointer_line(members_of("Iterator"), ["next", "count", "next", ""]) == (
        "Members documented on Iterator: next, count."
    )
    assert pointer_line(inherited_from("Command"), ["name"]) == "Inherited from Command: name."
    assert pointer_line(inherited_from("geo::Shape", "Public Member Functions"), ["area"]) == (
        "Public Member Functions inherited from geo::Shape: area."
    )
    assert pointer_line(DOCUMENTED_BELOW, []) == "Documented below."


def test_every_line_the_generators_readers_write_reads_back_as_a_pointer():
    lines = [
        pointer_line(members_of("Borrow<T>"), ["borrow"]),
        pointer_line(inherited_from("MutableBidict"), ["putall", "forceput"]),
        pointer_line(inherited_from("Python's built-in dict"), ["update"]),
        pointer_line(inherited_from("log4cplus::Appender", "Public Member Functions"), ["close", "doAppend"]),
        pointer_line(DOCUMENTED_BELOW, ["add", "addAll"]),
        pointer_line(DOCUMENTED_ELSEWHERE, ["Difference", "Drain"]),
        pointer_line(WITHOUT_DOCUMENTATION, ["__slots__"]),
        documented_on("Collection.add(E)"),
    ]
    assert all(is_pointer_line(line) for line in lines), [line for line in lines if not is_pointer_line(line)]


def test_prose_and_code_are_not_pointer_lines():
    for line in (
        "Associate key with val unconditionally.",
        "Note: the map keeps its insertion order.",
        "Returns: the removed value",
        "This method is inherited from the base class, which documents it in full",
        "let it = (1..5).tuple_windows();",
        "",
    ):
        assert not is_pointer_line(line), line
