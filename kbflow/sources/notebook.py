"""Jupyter notebooks (``.ipynb``) read as a person reads them: cells, not their JSON.

A notebook is one document unit whose text is a Markdown rendering of its
cells, in order, each separated from the next by a blank line:

- a Markdown or raw cell: its source as written (nbformat 3's heading cells
  as ``#`` headings), an image pasted in as a ``data:`` URI without its base64;
- a code cell: its source in a fence named by the notebook's language
  (``language_info``, else the kernel's), then its text outputs in an
  ``output`` fence: streams, results' and displays' ``text/plain``, errors'
  name and value (a ``text/markdown`` display as its Markdown). ANSI colour codes and the lines a progress bar overwrote
  (``\\r``) are removed, and a cell's outputs stop after
  :data:`OUTPUT_MAX_LINES` lines or :data:`OUTPUT_MAX_CHARS` characters,
  saying how many lines were left. Images, HTML and widgets are left out, as
  is the ``text/plain`` stand-in of a figure (``<Figure size ...>``).

Markdown headings give the chunks their heading paths; ``#`` comments in code
are fenced, so they are not headings. The rendering is a pure function of the
file's text, so a citation's character range into it resolves by rendering the
file again (:mod:`kbflow.retrieve.resolver`). Before this, a notebook was read
as its JSON: escaped lines, base64 images and all.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kbflow.errors import SourceError
from kbflow.sources.jsontext import loads

__all__ = ["NOTEBOOK_SIZE_FACTOR", "OUTPUT_MAX_CHARS", "OUTPUT_MAX_LINES", "is_notebook", "notebook_text"]

#: the outputs of one code cell kept in the text, at most (the rest is counted, not read)
OUTPUT_MAX_LINES = 20
OUTPUT_MAX_CHARS = 2000
#: a notebook file may be this many times a source's file size limit: its images are not read (the limit then
#: applies to its text)
NOTEBOOK_SIZE_FACTOR = 16

#: an image pasted into a Markdown cell as a data URI: its base64 is kept out, the URI's head stays
_DATA_URI = re.compile(r"(data:[\w/+.-]+;base64,)[A-Za-z0-9+/=]{64,}")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
#: a ``text/plain`` that only names an object: a figure's or a plot call's stand-in
_BARE_REPR = re.compile(r"\[?<[\w. ]+(?: at 0x[0-9a-fA-F]+| size [^>]*| with [^>]*)?>(?:, <[^>]*>)*\]?")


def is_notebook(path: str) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its ``.ipynb`` suffix)."""
    return path.lower().endswith(".ipynb")


def _joined(value: Any) -> str:
    """A notebook string field: a string, or a list of strings (lines, each with its line end)."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _plain(text: str) -> str:
    """Output text as a terminal showed it: no colour codes, only the last of a line's ``\\r`` rewrites."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return "\n".join(_last_rewrite(line) for line in text.split("\n"))


def _last_rewrite(line: str) -> str:
    """What a line rewritten with ``\r`` (a progress bar) showed last: its last part with text."""
    return next((part for part in reversed(line.split("\r")) if part.strip()), "") if "\r" in line else line


def _output_text(out: dict[str, Any]) -> str:
    """The text one output shows (``""``: none worth reading), nbformat 4 or 3."""
    kind = out.get("output_type")
    if kind == "stream":
        return _joined(out.get("text"))
    if kind in ("error", "pyerr"):
        return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
    data: dict[str, Any] = out["data"] if isinstance(out.get("data"), dict) else out  # nbformat 3: on the output
    if any(str(key).startswith("image/") or key in ("png", "jpeg", "svg") for key in data):
        return ""
    text = _joined(data.get("text/markdown", data.get("text/plain", data.get("text"))))
    return "" if _BARE_REPR.fullmatch(text.strip()) else text


def _outputs(outputs: Any) -> str:
    """A code cell's outputs as one text, cut at :data:`OUTPUT_MAX_LINES` lines / :data:`OUTPUT_MAX_CHARS`."""
    texts = [_plain(_output_text(o)).strip("\n") for o in outputs or [] if isinstance(o, dict)]
    lines = "\n".join(t for t in texts if t.strip()).split("\n")
    kept: list[str] = []
    size = 0
    for line in lines:
        if len(kept) == OUTPUT_MAX_LINES or size + len(line) > OUTPUT_MAX_CHARS:
            break
        kept.append(line)
        size += len(line) + 1
    if len(kept) < len(lines):
        left = len(lines) - len(kept)
        kept.append(f"... ({left} more line{'s' if left != 1 else ''} of output)")
    return "\n".join(kept).strip("\n")


def _fenced(body: str, info: str) -> str:
    """``body`` in a backtick fence longer than any backtick run at the start of one of its lines."""
    runs = [len(m.group(0)) for m in re.finditer(r"(?m)^\s*(`{3,})", body)]
    mark = "`" * max(3, 1 + max(runs, default=0))
    return f"{mark}{info}\n{body}\n{mark}"


def _cells(nb: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The cells of a notebook (nbformat 4, or 3's worksheets) and its language."""
    meta: dict[str, Any] = nb["metadata"] if isinstance(nb.get("metadata"), dict) else {}
    info, kernel = meta.get("language_info"), meta.get("kernelspec")
    language = (info or {}).get("name") if isinstance(info, dict) else None
    if not language and isinstance(kernel, dict):
        language = kernel.get("language")
    if isinstance(nb.get("cells"), list):
        cells = nb["cells"]
    elif isinstance(nb.get("worksheets"), list):
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells") or []]
    else:
        raise ValueError("no cells (neither nbformat 4's 'cells' nor 3's 'worksheets')")
    return [c for c in cells if isinstance(c, dict)], str(language or "")


def _cell_text(cell: dict[str, Any], language: str) -> str:
    kind = cell.get("cell_type")
    source = _joined(cell.get("source", cell.get("input"))).replace("\r\n", "\n").strip("\n")
    if kind == "heading":  # nbformat 3
        level = cell.get("level")
        marks = "#" * (level if isinstance(level, int) and 1 <= level <= 6 else 1)
        return f"{marks} {source.strip()}" if source.strip() else ""
    if kind != "code":
        return _DATA_URI.sub(r"\1...", source) if source.strip() else ""
    parts = [_fenced(source, str(cell.get("language") or language).lower())] if source.strip() else []
    output = _outputs(cell.get("outputs"))
    if output:
        parts.append(_fenced(output, "output"))
    return "\n\n".join(parts)


def notebook_text(text: str, where: str) -> str:
    """The Markdown rendering of the notebook whose file holds ``text`` (see the module's docstring).

    Raises :class:`SourceError` naming ``where`` when ``text`` is not a notebook's JSON.
    """
    try:
        nb = loads(text)
        if not isinstance(nb, dict):
            raise ValueError("not a JSON object")
        cells, language = _cells(nb)
    except (ValueError, RecursionError) as exc:
        reason = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise SourceError(f"{where}: not a Jupyter notebook ({reason})") from None
    return "\n\n".join(t for t in (_cell_text(c, language) for c in cells) if t) + "\n"
