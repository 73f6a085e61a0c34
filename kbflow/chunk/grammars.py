"""What each language's units look like in its tree-sitter grammar, and the parsers that read them.

One :class:`LangSpec` per language names the node types that are units
(functions, classes, methods, impls, modules), the nodes that lead into the
next unit (doc comments, decorators, attributes), wrappers whose inner node is
the real definition (``export``, ``template<...>``, Python decorators), and
nodes that are spliced into their parent (C preprocessor conditionals, Java
enum bodies, and Python's ``if``/``try`` blocks where they define functions),
the units that hold methods (a split one's body is labelled "class body
without its methods") and where a file's docstring is.
:meth:`LangSpec.qualify` joins a unit's name (:mod:`kbflow.chunk.unit_names`
reads it) to its enclosing scope (``Retriever.search``, ``impl Lake::open``,
``Kb::Lake#open``).

The grammars come from the per-language wheels (``tree-sitter-python``,
``tree-sitter-rust``...); nothing is downloaded at run time.
"""

from __future__ import annotations

import functools
import logging
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
