"""What a reader of a web page cannot see: text hidden by HTML attributes, inline styles and the page's
own ``<style>`` rules. Hidden text is a known carrier of prompt injections, so it is never indexed.

Caught, on an element or through a rule of the page's ``<style>`` elements
whose selector is simple (``p``, ``.note``, ``#x``, ``div.note.small``, and
comma lists of those) or two simple selectors joined by the general sibling
combinator (``.toggle ~ .source``: the element after a sibling, as pdoc hides
each function's source behind a "View Source" checkbox):

- ``hidden``, ``aria-hidden="true"``, ``<template>``, ``<noscript>`` (elsewhere);
- ``display: none``, ``visibility: hidden|collapse``, ``opacity: 0``;
- ``font-size: 0`` (any unit), ``transform: scale(0)``;
- zero or one-pixel boxes that clip their content (``width``/``height`` of
  0-1px with ``overflow: hidden``, ``clip: rect(0 0 0 0)``,
  ``clip-path: inset(50%)``): the "screen reader only" pattern, also caught
  by class name (``sr-only``, ``visually-hidden``, ``screen-reader-text``…)
  since its rules usually live in an external stylesheet;
- positioned far off screen (``left``/``top``/``text-indent``/``margin-left`` of
  -999px or less);
- text coloured like its background (``color`` equal to the element's own
  ``background``/``background-color``, or to the page's, as ``body``/``html``
  rules or attributes set it; white when unset).

Not caught (and documented as such): external stylesheets other than the
class names above, selectors with other combinators, attributes or pseudo-classes
(a rule for ``:checked`` is a state the reader has not chosen yet),
``@media`` blocks, styles set by scripts, inherited colours from ancestors,
and text hidden behind other elements (z-index, overlays).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["StyleRules", "hidden_reason", "sibling_hidden_reason"]

_SR_CLASSES = {
    "sr-only", "visually-hidden", "visuallyhidden", "screen-reader-text", "screen-reader-only", "screenreader-only",
    "sr-text", "a11y-hidden", "hidden-visually", "u-visually-hidden", "offscreen", "element-invisible",
}  # fmt: skip
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_AT_BLOCK = re.compile(r"@[\w-]+[^{;]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}|@[\w-]+[^{;]*;", re.S)
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE = re.compile(r"^([a-zA-Z][\w-]*)?((?:[.#][\w-]+)*)$")
_LENGTH = re.compile(r"^(-?\d*\.?\d+)\s*(px|pt|em|rem|%|vw|vh|ex|ch|cm|mm|in)?$")
_NAMED = {
    "white": "#ffffff", "black": "#000000", "red": "#ff0000", "green": "#008000", "blue": "#0000ff",
    "yellow": "#ffff00", "gray": "#808080", "grey": "#808080", "silver": "#c0c0c0", "transparent": "transparent",
}  # fmt: skip


def declarations(style: str) -> dict[str, str]:
    """``{property: value}`` of a declaration block (later wins; ``!important`` dropped; lower case)."""
    out: dict[str, str] = {}
    for part in style.split(";"):
        name, sep, value = part.partition(":")
        if sep:
            out[name.strip().lower()] = value.replace("!important", "").strip().lower()
    return out


def _color(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip().lower()
    if value in _NAMED:
        return _NAMED[value]
    m = re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", value)
    if m:
        h = m.group(1)
        return "#" + ("".join(c * 2 for c in h) if len(h) == 3 else h)
    m = re.fullmatch(r"rgba?\(\s*(\d+)\s*,?\s*(\d+)\s*,?\s*(\d+)\s*(?:[,/]\s*([\d.]+%?)\s*)?\)", value)
    if m:
        if m.group(4) is not None and m.group(4).rstrip("%") in ("0", "0.0"):
            return "transparent"
        return "#" + "".join(f"{min(255, int(x)):02x}" for x in m.groups()[:3])
    return None


def _background(decls: dict[str, str]) -> str | None:
    bg = decls.get("background-color")
    if bg is None and "background" in decls:
        # the first colour-looking token of the shorthand
        for token in re.split(r"\s+(?![^(]*\))", decls["background"]):
            if _color(token):
                bg = token
                break
    return _color(bg)


def _length(value: str | None) -> float | None:
    """A length in pixels (roughly: em/rem at 16px); ``None`` when not a plain length."""
    if value is None:
        return None
    m = _LENGTH.match(value.strip())
    if not m:
        return None
    number = float(m.group(1))
    unit = m.group(2) or "px"
    return number * (16.0 if unit in ("em", "rem") else 1.0)


@dataclass
class StyleRules:
    """The simple rules of a page's ``<style>`` elements, and the page's background colour."""

    #: (selector, declarations), in document order
    rules: list[tuple[_Simple, dict[str, str]]]
    background: str = "#ffffff"
    #: ``A ~ B`` rules: (A, B, declarations), in document order
    siblings: list[tuple[_Simple, _Simple, dict[str, str]]] = field(default_factory=list)

    @classmethod
    def parse(cls, css: str) -> StyleRules:
        css = _AT_BLOCK.sub("", _COMMENT.sub("", css))
        rules = []
        siblings = []
        for selectors, body in _RULE.findall(css):
            decls = declarations(body)
            for selector in selectors.split(","):
                before, tilde, after = selector.partition("~")
                if tilde:
                    first, second = _simple(before), _simple(after)
                    if first and second:
                        siblings.append((first, second, decls))
                    continue
                simple = _simple(selector)
                if simple:  # other combinators, attributes, pseudo-classes: not evaluated
                    rules.append((simple, decls))
        page = cls(rules, siblings=siblings)
        for tag in ("html", "body"):
            bg = _background(page.matching(tag, {}))
            if bg and bg != "transparent":
                page.background = bg
        return page

    def after_siblings(
        self, tag: str, attrs: dict[str, str], before: Callable[[], list[tuple[str, dict[str, str]]]]
    ) -> dict[str, str]:
        """The declarations of every ``A ~ B`` rule that selects this element (``B``) after one of its siblings
        (``before()``: ``(tag, attrs)`` of each element before it, asked only where some ``B`` selects it),
        later rules winning."""
        mine = [(first, decls) for first, second, decls in self.siblings if _selects(second, tag, attrs)]
        if not mine:
            return {}
        siblings = [(t, _classes(a), a.get("id")) for t, a in before()]
        out: dict[str, str] = {}
        for first, decls in mine:
            if any(_matches(first, *sibling) for sibling in siblings):
                out.update(decls)
        return out

    def matching(self, tag: str, attrs: dict[str, str]) -> dict[str, str]:
        """The declarations of every rule that selects this element (later rules win), then its inline style."""
        classes, ident = _classes(attrs), attrs.get("id")
        out: dict[str, str] = {}
        for simple, decls in self.rules:
            if _matches(simple, tag, classes, ident):
                out.update(decls)
        out.update(declarations(attrs.get("style", "")))
        if tag == "body" and "bgcolor" in attrs and "background-color" not in out:
            out["background-color"] = attrs["bgcolor"].lower()
        return out


_Simple = tuple[str | None, frozenset[str], str | None]


def _simple(selector: str) -> _Simple | None:
    """``(tag or None, classes, id or None)`` of a simple selector (``div.note#x``), else ``None``."""
    m = _SIMPLE.match(selector.strip())
    if not m or not selector.strip():
        return None
    parts = re.findall(r"[.#][\w-]+", m.group(2) or "")
    classes = frozenset(p[1:].lower() for p in parts if p[0] == ".")
    ident = next((p[1:] for p in parts if p[0] == "#"), None)
    return (m.group(1) or "").lower() or None, classes, ident


def _classes(attrs: dict[str, str]) -> set[str]:
    return {c.lower() for c in attrs.get("class", "").split()}


def _matches(simple: _Simple, tag: str, classes: set[str], ident: str | None) -> bool:
    """Whether the simple selector selects an element of ``tag``, ``classes`` and ``ident`` (an empty one: none)."""
    rule_tag, rule_classes, rule_id = simple
    if rule_tag is None and not rule_classes and rule_id is None:
        return False
    return (rule_tag is None or rule_tag == tag) and rule_classes <= classes and rule_id in (None, ident)


def _selects(simple: _Simple, tag: str, attrs: dict[str, str]) -> bool:
    return _matches(simple, tag, _classes(attrs), attrs.get("id"))


def hidden_reason(tag: str, attrs: dict[str, str], rules: StyleRules) -> str | None:
    """Why a reader cannot see this element's text (``"display:none"``, ``"font-size:0"``, …), else ``None``."""
    if "hidden" in attrs:
        return "hidden attribute"
    if attrs.get("aria-hidden", "").strip().lower() == "true":
        return 'aria-hidden="true"'
    classes = {c.lower() for c in attrs.get("class", "").split()}
    sr = classes & _SR_CLASSES
    if sr:
        return f"screen-reader-only class {sorted(sr)[0]!r}"
    d = rules.matching(tag, attrs)
    if not d:
        return None
    return _unseen(d) or _clipped(d) or _off_screen(d) or _camouflaged(d, rules)


def sibling_hidden_reason(
    tag: str, attrs: dict[str, str], before: Callable[[], list[tuple[str, dict[str, str]]]], rules: StyleRules
) -> str | None:
    """Why an ``A ~ B`` rule hides this element (``before()``: its preceding siblings' ``(tag, attrs)``, asked
    only where a rule's ``B`` selects it), else ``None``; its inline style still wins."""
    d = rules.after_siblings(tag, attrs, before)
    if not d:
        return None
    d.update(declarations(attrs.get("style", "")))
    return _unseen(d) or _clipped(d) or _off_screen(d)


def _unseen(d: dict[str, str]) -> str | None:
    """Hidden by display, visibility, opacity, font size or a zero scale."""
    if d.get("display") == "none":
        return "display:none"
    if d.get("visibility") in ("hidden", "collapse"):
        return f"visibility:{d['visibility']}"
    if d.get("opacity") is not None and _length(d["opacity"]) == 0:
        return "opacity:0"
    size = _length(d.get("font-size"))
    if size is not None and size <= 0:
        return "font-size:0"
    if re.search(r"scale\(\s*0(?:\.0+)?\s*(?:,\s*0(?:\.0+)?\s*)?\)", d.get("transform", "")):
        return "transform:scale(0)"
    return None


def _clipped(d: dict[str, str]) -> str | None:
    """Cut to nothing: a 0-1px box that clips, ``clip:rect(0 0 0 0)``, ``clip-path:inset(50%)``."""
    width, height = _length(d.get("width")), _length(d.get("height"))
    clips = d.get("overflow") == "hidden" or "clip" in d or "clip-path" in d
    if clips and ((width is not None and width <= 1) or (height is not None and height <= 1)):
        return "a 0-1px box that clips its content"
    if re.fullmatch(r"rect\(\s*0(px)?[\s,]+0(px)?[\s,]+0(px)?[\s,]+0(px)?\s*\)", d.get("clip", "")):
        return "clip:rect(0 0 0 0)"
    if re.fullmatch(r"inset\(\s*50%\s*\)", d.get("clip-path", "")):
        return "clip-path:inset(50%)"
    return None


def _off_screen(d: dict[str, str]) -> str | None:
    """Moved at least 999px off the left or top edge."""
    for prop in ("left", "top", "text-indent", "margin-left", "right"):
        offset = _length(d.get(prop))
        if (
            offset is not None
            and offset <= -999
            and (prop in ("text-indent", "margin-left") or d.get("position") in ("absolute", "fixed"))
        ):
            return f"off screen ({prop}:{d[prop]})"
    return None


def _camouflaged(d: dict[str, str], rules: StyleRules) -> str | None:
    """Text coloured like the background it sits on."""
    color = _color(d.get("color"))
    if color and color != "transparent":
        background = _background(d) or rules.background
        if background == color:
            return f"text coloured like its background ({color})"
    return None
