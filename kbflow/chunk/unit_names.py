"""The name a code unit's own definition gives it, read from its tree-sitter node as its language writes it.

:func:`unit_name` reads ``Lake.Open`` for a Go method, ``impl Display for
Lake`` for a Rust impl, ``Lake::open`` for a C++ out-of-class definition and
``List<T>.second`` for a Kotlin extension. JavaScript names most functions by
binding, not by declaring: :func:`bound_function` finds the function a
statement binds (``const f = () => {...}``, ``exports.f = function``,
``Lake.prototype.open = function``, ``export default function``, a class
field), and :func:`assigned_name` names it as a reader says it
(``exports.parse`` is ``parse``, ``_proto.open`` is ``Lake.open`` where
``_proto = Lake.prototype``). A library written before modules wraps its
whole code in a function it calls at once: :func:`called_at_once` finds
that function, whose body the chunker then reads as a module's top level.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BINDINGS", "assigned_name", "bound_function", "called_at_once", "prototype_aliases", "unit_name"]

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})
_DECLARATOR_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "type_identifier"}
)


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _declarator_name(node) -> str | None:
    """C/C++: follow ``declarator`` fields (pointers, function declarators) down to the name."""
    for _ in range(8):
        if node is None:
            return None
        if node.type in _DECLARATOR_NAMES:
            return _text(node)
        inner = node.child_by_field_name("declarator")
        if inner is None:  # reference declarators hold theirs without a field name
            inner = next(
                (c for c in node.named_children if c.type.endswith("declarator") or c.type in _DECLARATOR_NAMES),
                None,
            )
        node = inner
    return None


def _first_of(node, types: frozenset[str] | set[str]):
    """The first descendant of ``node`` (breadth first) whose type is in ``types``."""
    queue = [node]
    while queue:
        cur = queue.pop(0)
        if cur.type in types:
            return cur
        queue.extend(cur.named_children)
    return None


_RECEIVER_TYPES = frozenset({"user_type", "nullable_type", "parenthesized_type", "function_type"})


def _kotlin_receiver(node, name):
    """A Kotlin extension function's receiver type: a type written before its name (``fun Lake.describe()``)."""
    if name is None:
        return None
    for child in node.named_children:
        if child.start_byte >= name.start_byte:
            return None
        if child.type in _RECEIVER_TYPES:
            return child
    return None


def unit_name(node, aliases: Mapping[str, str] | None = None) -> str:
    """The name a unit's own definition gives it, as its language writes it (``aliases``: see
    :func:`assigned_name`)."""
    kind = node.type
    if kind == "impl_item":  # rust: impl Lake / impl Display for Lake
        target = node.child_by_field_name("type")
        trait = node.child_by_field_name("trait")
        name = _text(target) if target is not None else "?"
        return f"impl {_text(trait)} for {name}" if trait is not None else f"impl {name}"
    if kind == "method_declaration" and node.child_by_field_name("receiver") is not None:  # go
        recv = _first_of(node.child_by_field_name("receiver"), {"type_identifier"})
        name = node.child_by_field_name("name")
        own = _text(name) if name is not None else "<anonymous>"
        return f"{_text(recv)}.{own}" if recv is not None else own
    if kind == "type_declaration":  # go: type X struct{...} / type ( A int; B ... )
        spec = _first_of(node, {"type_spec", "type_alias"})
        spec_name = spec.child_by_field_name("name") if spec is not None else None
        return _text(spec_name) if spec_name is not None else "<anonymous>"
    if kind in ("function_definition", "type_definition") and node.child_by_field_name("declarator") is not None:
        return _declarator_name(node.child_by_field_name("declarator")) or "<anonymous>"
    if kind == "companion_object" and node.child_by_field_name("name") is None:  # kotlin
        return "Companion"
    if kind == "init_declaration":  # swift
        return "init"
    name = node.child_by_field_name("name")
    receiver = _kotlin_receiver(node, name) if kind == "function_declaration" else None
    if receiver is not None:  # kotlin: fun List<T>.second()
        return f"{_text(receiver)}.{_text(name)}"
    if kind == "class_declaration" and _text(node.child_by_field_name("declaration_kind") or node) == "extension":
        return f"extension {_text(name)}" if name is not None else "extension"  # swift
    if kind in ("expression_statement", "export_statement", "field_definition", "public_field_definition"):
        bound = _binding_name(node, aliases) if bound_function(node) is not None else None
        if bound is not None:
            return bound
    if name is None and kind in ("lexical_declaration", "variable_declaration"):
        for decl in node.named_children:
            name = decl.child_by_field_name("name")
            if name is not None:
                break
    return _text(name) if name is not None else "<anonymous>"


#: JavaScript statements that are a unit where they bind a function (or class) to a name
BINDINGS = frozenset(
    {
        "lexical_declaration",
        "variable_declaration",
        "expression_statement",
        "export_statement",
        "field_definition",
        "public_field_definition",
    }
)


def _function_value(node):
    """``node`` as a function or class, seen through parentheses and an immediate call (``(function () {...})``,
    Babel's ``/*#__PURE__*/function () {...}()`` class); ``None`` for any other value."""
    for _ in range(4):
        if node is None or node.type in _FUNCTION_VALUES:
            return node
        if node.type == "parenthesized_expression":
            node = next((c for c in node.named_children if c.type != "comment"), None)
        elif node.type == "call_expression":
            node = node.child_by_field_name("function")
        else:
            return None
    return None


def bound_function(node):
    """The function or class a JavaScript statement binds to a name, or ``None``: ``const f = () => {...}``,
    ``exports.f = function``, ``Lake.prototype.open = function``, ``export default function () {...}``, a
    class field ``onClick = () => {...}`` (``const x = 1`` binds none: it is plain code)."""
    kind = node.type
    if kind in ("lexical_declaration", "variable_declaration"):
        for decl in node.named_children:
            value = _function_value(decl.child_by_field_name("value"))
            if value is not None:
                return value
        return None
    if kind == "expression_statement":
        expr = node.named_children[0] if node.named_children else None
        if expr is None or expr.type != "assignment_expression":
            return None
        return _function_value(expr.child_by_field_name("right"))
    if kind in ("export_statement", "field_definition", "public_field_definition"):
        return _function_value(node.child_by_field_name("value"))
    return None


#: the functions a statement may call at once (a class is built, not called)
_CALLABLE = _FUNCTION_VALUES - {"class"}


def _bare(node):
    """``node`` without the parentheses, ``!`` or ``void`` around it (``!function () {...}()``)."""
    while node is not None and node.type in ("parenthesized_expression", "unary_expression"):
        if node.type == "unary_expression":
            node = node.child_by_field_name("argument")
        else:
            node = next((c for c in node.named_children if c.type != "comment"), None)
    return node


def called_at_once(node) -> list:
    """The functions a JavaScript statement calls at once, where a library wraps its code: the one called
    (``;(function () {...}.call(this));`` as lodash writes it, ``!function () {...}()``, ``(() => {...})()``),
    then those it is given (UMD's ``(function (root, factory) {...})(this, function () {...})``, whose code
    is the factory's); ``[]`` for any other statement (``describe("x", function () {...})`` calls
    ``describe``, no function)."""
    if node.type != "expression_statement" or not node.named_children:
        return []
    call = _bare(node.named_children[0])
    if call is None or call.type != "call_expression":
        return []
    callee = _bare(call.child_by_field_name("function"))
    if callee is not None and callee.type == "member_expression":  # `function () {...}.call(this)`
        prop = callee.child_by_field_name("property")
        if prop is None or prop.text not in (b"call", b"apply"):
            return []
        callee = _bare(callee.child_by_field_name("object"))
    if callee is None or callee.type not in _CALLABLE:
        return []
    arguments = call.child_by_field_name("arguments")
    given = [_bare(a) for a in (arguments.named_children if arguments is not None else ())]
    return [callee, *(f for f in given if f is not None and f.type in _CALLABLE)]


_EXPORTS = ("module.exports.", "exports.")


def prototype_aliases(parent) -> dict[str, str]:
    """``{name: class}`` for each statement among ``parent``'s children that says ``var name = Class.prototype``
    (Babel's ``_proto``), read once per block (a file of thousands of assignments is not read once per
    assignment)."""
    out: dict[str, str] = {}
    for sibling in parent.named_children if parent is not None else ():
        if sibling.type not in ("lexical_declaration", "variable_declaration"):
            continue
        for decl in sibling.named_children:
            target, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
            if target is None or value is None or value.type != "member_expression":
                continue
            owner, prop = value.child_by_field_name("object"), value.child_by_field_name("property")
            if owner is not None and prop is not None and _text(prop) == "prototype":
                out.setdefault(_text(target), _text(owner))
    return out


def assigned_name(node, left, aliases: Mapping[str, str] | None = None) -> str:
    """The name an assignment gives its function, as a reader says it: ``exports.parse`` is ``parse``,
    ``Lake.prototype.open`` and ``_proto.open`` (where ``_proto = Lake.prototype``) are ``Lake.open``;
    ``module.exports`` stays itself. ``aliases``: :func:`prototype_aliases` of ``node``'s block, where the
    caller has it."""
    name = "".join(_text(left).split())
    for prefix in _EXPORTS:
        if name.startswith(prefix):
            return name[len(prefix) :]
    name = name.replace(".prototype.", ".")
    head, dot, rest = name.partition(".")
    if dot and "." not in rest:
        cls = (prototype_aliases(node.parent) if aliases is None else aliases).get(head)
        if cls is not None:
            return f"{cls}.{rest}"
    return name


def _binding_name(node, aliases: Mapping[str, str] | None) -> str | None:
    """The name of a JavaScript binding statement that :func:`unit_name` does not read from a ``name`` field."""
    kind = node.type
    if kind == "expression_statement":
        expr = node.named_children[0]
        return assigned_name(node, expr.child_by_field_name("left"), aliases)
    if kind == "export_statement":  # export default function () {...}
        value = bound_function(node)
        own = value.child_by_field_name("name") if value is not None else None
        return _text(own) if own is not None else "default"
    if kind in ("field_definition", "public_field_definition"):
        prop = node.child_by_field_name("property") or node.child_by_field_name("name")
        return _text(prop) if prop is not None else None
    return None
