"""JavaScript as packages publish it: functions bound to names are units, JSDoc leads into them."""

from __future__ import annotations

from kbflow.chunk.code import code_segments


def _symbols(text: str, language: str = "javascript", budget: int = 400) -> dict[str, tuple[int, int]]:
    return {s[2]: (s[0], s[1]) for s in code_segments(text, language, budget=budget) if s[2]}


def test_commonjs_exports_are_units_named_as_a_reader_says_them():
    js = (
        "'use strict';\n"
        "exports.parse = function (str) {\n  return str.split('&');\n};\n"
        "module.exports.stringify = function stringify(obj) {\n  return String(obj);\n};\n"
        "exports.limit = 1000;\n"
        "Lake.prototype.open = function () {\n  return this;\n};\n"
        "module.exports = function (str, opts) {\n  return parse(str, opts);\n};\n"
    )
    symbols = _symbols(js)
    assert symbols["parse"] == (2, 4)
    assert symbols["stringify"] == (5, 7)
    assert symbols["Lake.open"] == (9, 11)
    assert symbols["module.exports"] == (12, 14)
    assert "limit" not in symbols  # a value, not a function: plain code
    assert "exports.limit" not in symbols


def test_babel_classes_and_their_prototype_methods():
    """Babel writes a class as an immediately called function whose methods are assigned to ``_proto``: each
    method is a unit named after the class, and the class is split at them."""
    methods = "".join(
        f"  _proto.{name} = function {name}(a, b) {{\n"
        + "".join(f"    var v{i} = a + b * {i};\n" for i in range(12))
        + "    return v0;\n  };\n\n"
        for name in ("startOf", "add", "format")
    )
    js = (
        "var Dayjs = /*#__PURE__*/function () {\n"
        "  function Dayjs(cfg) {\n    this.$L = cfg.locale;\n  }\n\n"
        "  var _proto = Dayjs.prototype;\n\n" + methods + "  return Dayjs;\n}();\n\nexport default Dayjs;\n"
    )
    symbols = _symbols(js, budget=120)
    assert {"Dayjs.startOf", "Dayjs.add", "Dayjs.format"} <= set(symbols)
    assert not any(name.startswith("Dayjs.Dayjs.") for name in symbols)


def test_export_default_functions_and_class_fields():
    js = (
        "export default function (option, Dayjs) {\n  return Dayjs;\n}\n"
        "class Button {\n  onClick = (event) => {\n    this.clicked = true;\n  };\n  label = 'ok';\n}\n"
    )
    segs = code_segments(js, "javascript", budget=10)  # small enough that the class is split at its members
    symbols = {s[2] for s in segs}
    assert "default" in symbols
    assert "Button.onClick" in symbols
    assert "Button.label" not in symbols
    named = _symbols("export default function relativeTime(o, c) {\n  return c;\n}\n")
    assert "relativeTime" in named


def test_typescript_assignments_and_fields():
    ts = (
        "exports.open = function (path: string): Lake {\n  return new Lake(path);\n};\n"
        "class Lake {\n  close = (): void => {\n    this.open = false;\n  };\n}\n"
    )
    symbols = {s[2] for s in code_segments(ts, "typescript", budget=8)}
    assert {"open", "Lake.close"} <= symbols


def test_jsdoc_leads_into_its_function_across_blank_lines():
    js = "/**\n * Define a command.\n *\n * @param {string} name\n */\n\nfunction command(name) {\n  return name;\n}\n"
    assert _symbols(js)["command"] == (1, 9)


def test_a_licence_header_does_not_lead_into_the_first_function():
    js = (
        "/**\n * @license MIT\n * Copyright (c) the authors\n */\n\n"
        "function first(a) {\n  var x = a + 1;\n  var y = x * 2;\n  return y;\n}\n"
    )
    segs = code_segments(js, "javascript", budget=400, min_tokens=0)
    assert ("first", (6, 10)) in [(s[2], (s[0], s[1])) for s in segs]


def test_files_that_are_not_javascript_under_a_js_name_are_cut_without_a_crash():
    """A ``.js`` file that holds JSON, or a shell script: every line is still in some chunk."""
    for text in ('{"name": "pkg", "version": "1.0.0"}\n', "#!/bin/sh\nset -e\necho 'hi' && exit 0\n"):
        segs = code_segments(text, "javascript", budget=50)
        assert segs and segs[0][0] == 1 and segs[-1][1] == text.count("\n")


def _wrapped(body: str) -> dict[str, str]:
    """The four ways a library wraps its code in a function called at once, each around ``body``."""
    return {
        "lodash": f";(function() {{\n{body}}}.call(this));\n",
        "bang": f"!function () {{\n{body}}}();\n",
        "arrow": f"(() => {{\n{body}}})();\n",
        # UMD as moment writes it: the factory, in parentheses, is the wrapper's argument
        "umd": (
            "(function (global, factory) {\n"
            "  typeof exports === 'object' ? module.exports = factory() : global.lib = factory();\n"
            f"}}(this, (function () {{ 'use strict';\n{body}  return {{ debounce: debounce }};\n}})));\n"
        ),
    }


def test_functions_a_library_wraps_in_a_function_called_at_once_are_units():
    body = (
        "  var VERSION = '4.17.21';\n\n"
        "  /** Delays `func` until `wait` milliseconds have passed since it was last invoked. */\n"
        "  function debounce(func, wait) {\n    var timerId;\n    return func;\n  }\n\n"
        "  function runInContext(context) {\n    function chunk(array, size) {\n      return [array];\n    }\n"
        + "".join(f"    var pad{i} = context.pad + {i} * size;\n" for i in range(60))
        + "    return chunk;\n  }\n"
    )
    for form, js in _wrapped(body).items():
        symbols = _symbols(js, budget=120)
        lines = js.split("\n")
        jsdoc = next(n for n, line in enumerate(lines, 1) if line.startswith("  /** Delays"))
        assert symbols["debounce"] == (jsdoc, jsdoc + 4), form  # its JSDoc leads into it
        assert "runInContext.chunk" in symbols, form  # a function over the budget is split at its own
        covered = {n for start, end, *_ in code_segments(js, "javascript", budget=120) for n in range(start, end + 1)}
        assert all(n in covered for n, line in enumerate(lines, 1) if line.strip()), form  # no line lost


def test_a_call_with_a_function_argument_is_not_a_wrapper():
    js = (
        "describe('the parser', function () {\n"
        "  function helper(x) {\n    return x;\n  }\n"
        "  it('parses', function () { helper(1); });\n"
        "});\n"
    )
    assert _symbols(js) == {}  # a test suite's callback, not the file's code: cut as plain code
    assert "helper" in _symbols(js.replace("describe('the parser', function", "(function").replace("});", "})();"))
