"""What each language's units look like in its tree-sitter grammar, and how they are named.

One :class:`LangSpec` per language names the node types that are units
(functions, classes, methods, impls, modules), the nodes that lead into the
next unit (doc comments, decorators, attributes), wrappers whose inner node is
the real definition (``export``, ``template<...>``, Python decorators), and
nodes that are spliced into their parent (C preprocessor conditionals, Java
enum bodies, and Python's ``if``/``try`` blocks where they define functions),
the units that hold methods (a split one's body is labelled "class body
without its methods") and where a file's docstring is. :func:`unit_name`
reads a unit's own name the way its language writes it (``Lake.Open`` for a
Go method, ``impl Display for Lake`` for a Rust impl, ``Lake::open`` for a
C++ out-of-class definition) and
:meth:`LangSpec.qualify` joins it to its enclosing scope
(``Retriever.search``, ``impl Lake::open``, ``Kb::Lake#open``).

The grammars come from the per-language wheels (``tree-sitter-python``,
``tree-sitter-rust``...); nothing is downloaded at run time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kbflow._lazy import require

_C_COMMENTS = frozenset({"comment"})
_LINE_BLOCK_COMMENTS = frozenset({"line_comment", "block_comment"})


@dataclass(frozen=True)
class LangSpec:
    """A language's units in its tree-sitter grammar."""

    module: str  # the grammar wheel's import name
    units: frozenset[str]  # node types that are units
    factory: str = "language"  # the wheel's function returning the grammar
    #: nodes that lead into the unit directly below them: doc comments, decorators, attributes
    leading: frozenset[str] = _C_COMMENTS
    #: wrapper node type -> the field that holds the real definition ("*": its first unit child)
    wrappers: dict[str, str] = field(default_factory=dict)
    #: nodes whose children are cut as if they were the parent's (preprocessor conditionals...)
    transparent: frozenset[str] = frozenset()
    #: compound statements spliced like ``transparent`` ones only where they hold a unit (Python's
    #: ``if sys.platform == "win32": def f(): ...``, ``try: ... except ImportError: def f(): ...``)
    conditional: frozenset[str] = frozenset()
    body_fields: tuple[str, ...] = ("body",)
    #: child node types that are a unit's body where no field names it (Kotlin's ``class_body``)
    body_types: frozenset[str] = frozenset()
    sep: str = "."  # between a scope and a member: Retriever.search, impl Lake::open
    #: unit type -> separator before its name where the language writes another (Ruby: Lake#open)
    member_sep: dict[str, str] = field(default_factory=dict)
    #: units that hold methods (a split one's body chunks are labelled "class body without its methods")
    classes: frozenset[str] = frozenset()
    #: module-level statement types that can hold the file's docstring (a string alone)
    docstring: frozenset[str] = frozenset()

    def qualify(self, scope: str, name: str, unit_type: str) -> str:
        if not scope:
            return name
        last = scope.rsplit(self.sep, 1)[-1]
        if name.startswith(last + self.sep):  # `Dayjs.format` assigned inside the scope `Dayjs`
            return scope + name[len(last) :]
        return f"{scope}{self.member_sep.get(unit_type, self.sep)}{name}"


_JS_UNITS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "method_definition",
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        # a function assigned to a name: `exports.parse = function`, `Lake.prototype.open = function`
        "expression_statement",
        "field_definition",  # a class field holding a function: `onClick = () => {...}`
    }
)
_TS_UNITS = _JS_UNITS | {
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "type_alias_declaration",
    "internal_module",
    "module",
    "expression_statement",  # wraps `namespace X {}`
    "function_signature",
    "abstract_method_signature",
    "public_field_definition",
}
_JS_CLASSES = frozenset({"class_declaration", "class", "abstract_class_declaration", "interface_declaration"})
_TS: dict[str, Any] = {
    "module": "tree_sitter_typescript",
    "units": frozenset(_TS_UNITS),
    "classes": _JS_CLASSES,
    "leading": frozenset({"comment", "decorator"}),
    "wrappers": {"export_statement": "declaration", "expression_statement": "*"},
}
_C_TRANSPARENT = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})
_C_UNITS = frozenset(
    {"function_definition", "struct_specifier", "union_specifier", "enum_specifier", "type_definition"}
)

LANGUAGES: dict[str, LangSpec] = {
    "python": LangSpec(
        module="tree_sitter_python",
        units=frozenset({"function_definition", "class_definition", "decorated_definition"}),
        wrappers={"decorated_definition": "definition"},
        classes=frozenset({"class_definition"}),
        docstring=frozenset({"expression_statement"}),
        conditional=frozenset(
            {
                "if_statement",
                "elif_clause",
                "else_clause",
                "try_statement",
                "except_clause",
                "finally_clause",
                "with_statement",
                "block",
            }
        ),
    ),
    "javascript": LangSpec(
        module="tree_sitter_javascript",
        units=_JS_UNITS,
        leading=frozenset({"comment", "decorator"}),
        wrappers={"export_statement": "declaration"},
        classes=_JS_CLASSES,
    ),
    "typescript": LangSpec(factory="language_typescript", **_TS),
    "tsx": LangSpec(factory="language_tsx", **_TS),
    "go": LangSpec(
        module="tree_sitter_go",
        units=frozenset({"function_declaration", "method_declaration", "type_declaration"}),
    ),
    "rust": LangSpec(
        module="tree_sitter_rust",
        units=frozenset(
            {
                "function_item",
                "struct_item",
                "enum_item",
                "union_item",
                "trait_item",
                "impl_item",
                "mod_item",
                "macro_definition",
            }
        ),
        leading=_LINE_BLOCK_COMMENTS | {"attribute_item"},
        sep="::",
        classes=frozenset({"impl_item", "trait_item"}),
    ),
    "java": LangSpec(
        module="tree_sitter_java",
        units=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
                "method_declaration",
                "constructor_declaration",
            }
        ),
        leading=_LINE_BLOCK_COMMENTS,
        transparent=frozenset({"enum_body_declarations"}),
        classes=frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
    ),
    "c": LangSpec(module="tree_sitter_c", units=_C_UNITS, transparent=_C_TRANSPARENT),
    "cpp": LangSpec(
        module="tree_sitter_cpp",
        units=_C_UNITS | {"class_specifier", "namespace_definition", "template_declaration"},
        wrappers={"template_declaration": "*"},
        transparent=_C_TRANSPARENT,
        sep="::",
        classes=frozenset({"class_specifier", "struct_specifier"}),
    ),
    "ruby": LangSpec(
        module="tree_sitter_ruby",
        units=frozenset({"method", "singleton_method", "class", "module", "singleton_class"}),
        sep="::",
        member_sep={"method": "#", "singleton_method": "."},
        classes=frozenset({"class", "module", "singleton_class"}),
    ),
    "bash": LangSpec(module="tree_sitter_bash", units=frozenset({"function_definition"})),
    "php": LangSpec(
        module="tree_sitter_php",
        factory="language_php",  # PHP with its surrounding HTML, as .php files hold it
        units=frozenset(
            {
                "function_definition",
                "class_declaration",
                "interface_declaration",
                "trait_declaration",
                "enum_declaration",
                "method_declaration",
            }
        ),
        sep="::",
        classes=frozenset({"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"}),
    ),
    "csharp": LangSpec(
        module="tree_sitter_c_sharp",
        units=frozenset(
            {
                "namespace_declaration",
                "class_declaration",
                "struct_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "method_declaration",
                "constructor_declaration",
            }
        ),
        classes=frozenset({"class_declaration", "struct_declaration", "interface_declaration", "record_declaration"}),
    ),
    "kotlin": LangSpec(
        module="tree_sitter_kotlin",
        units=frozenset({"class_declaration", "object_declaration", "companion_object", "function_declaration"}),
        leading=_LINE_BLOCK_COMMENTS,
        body_types=frozenset({"class_body", "enum_class_body"}),
        classes=frozenset({"class_declaration", "object_declaration", "companion_object"}),
    ),
    "scala": LangSpec(
        module="tree_sitter_scala",
        units=frozenset(
            {
                "class_definition",
                "object_definition",
                "trait_definition",
                "enum_definition",
                "function_definition",
                "function_declaration",
            }
        ),
        leading=frozenset({"comment", "block_comment"}),
        classes=frozenset({"class_definition", "object_definition", "trait_definition", "enum_definition"}),
    ),
    "swift": LangSpec(
        module="tree_sitter_swift",
        units=frozenset(
            {
                "class_declaration",  # class, struct, enum, extension, actor
                "protocol_declaration",
                "function_declaration",
                "init_declaration",
                "protocol_function_declaration",
            }
        ),
        leading=frozenset({"comment", "multiline_comment"}),
        classes=frozenset({"class_declaration", "protocol_declaration"}),
    ),
    "lua": LangSpec(module="tree_sitter_lua", units=frozenset({"function_declaration"})),
}

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})
_DECLARATOR_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "type_identifier"}
)


@functools.cache
def grammar_parser(module: str, factory: str = "language"):
    """A tree-sitter parser for the grammar wheel ``module`` (ImportError names the wheel when it is missing)."""
    ts = require("tree_sitter")
    return ts.Parser(ts.Language(getattr(require(module), factory)()))


@functools.cache
def grammar_installed(module: str, factory: str = "language") -> bool:
    """Whether the grammar wheel ``module`` loads; once per process, a missing one says how to install it (its
    files are then chunked by lines, without symbols)."""
    try:
        grammar_parser(module, factory)
    except ImportError as exc:
        language = module.removeprefix("tree_sitter_")
        logging.getLogger("kbflow").warning(
            "%s; until then %s files are chunked by lines, without symbols", exc, language
        )
        return False
    return True


def parser(language: str):
    """A tree-sitter parser for the code ``language``."""
    spec = LANGUAGES[language]
    return grammar_parser(spec.module, spec.factory)


def available(language: str | None) -> bool:
    """Whether a grammar for the code ``language`` is installed."""
    spec = LANGUAGES.get(language or "")
    return spec is not None and grammar_installed(spec.module, spec.factory)


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
