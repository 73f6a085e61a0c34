"""What a package's manifest says about its build folders: an npm package published as its build.

A walk leaves build output (``dist/``, ``build/``) out: it is generated from
sources the repository holds. But an npm package as published often holds
no sources: its ``package.json`` names ``dist/index.js`` as its code
(``main``, ``module``, ``exports``, ``bin``, ``types``). Such a folder is the
package's code and is read (:func:`published_build`), unless a ``src/``
folder beside it holds the code it was built from (then it is a build
beside its sources, and left out).

A published build often ships the same modules once per target
(``dist/esm-node/``, ``dist/esm-browser/``, ``dist/commonjs-browser/``
beside ``dist/``): each copy differs from the others by its module syntax
only. :func:`other_target` names the copies the manifest's own entry point
does not lie in, which the walk leaves out, so each function is read once.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator

#: build folders that a manifest can publish as the package's code
BUILD_DIRS = frozenset({"dist", "build"})
#: a manifest over this size is no npm manifest (it is not read)
MAX_MANIFEST_BYTES = 1 << 20
#: the manifest fields that name a package's files
ENTRY_FIELDS = ("main", "module", "browser", "types", "typings", "bin", "exports")
#: a folder in a build that holds the build for one target (module system, platform or language level)
_TARGET = re.compile(r"^(?:esm|cjs|commonjs|umd|amd|system|es\d*|browser|node|module|mjs|iife)(?:[-_.][\w.-]*)?$")
#: code a ``src/`` folder must hold for a build beside it to be a build of sources the walk reads
_SOURCE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".mts", ".cts")


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def entry_points(folder: str) -> tuple[str, ...]:
    """The files the ``package.json`` in ``folder`` names as the package's code, relative to ``folder``
    (``dist/index.js``); empty where there is no manifest, or one that is not JSON. Read once per version of
    the manifest (a server refreshing a source sees its edits)."""
    path = os.path.join(folder, "package.json")
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return _entry_points(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _entry_points(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    try:
        if size > MAX_MANIFEST_BYTES:
            return ()
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        return ()
    if not isinstance(manifest, dict):
        return ()
    found = []
    for name in ENTRY_FIELDS:
        for entry in _strings(manifest.get(name)):
            entry = os.path.normpath(entry.replace("\\", "/")).replace(os.sep, "/")
            if not entry.startswith("..") and not os.path.isabs(entry):
                found.append(entry)
    return tuple(dict.fromkeys(found))


def _holds_sources(folder: str) -> bool:
    for _dirpath, _dirs, files in os.walk(folder):
        if any(name.endswith(_SOURCE_SUFFIXES) for name in files):
            return True
    return False


def published_build(parent: str, name: str) -> bool:
    """Whether the build folder ``name`` in ``parent`` is the package's published code: its manifest names a
    file in it, and no ``src/`` beside it holds the code it was built from."""
    if name not in BUILD_DIRS:
        return False
    if not any(entry == name or entry.startswith(name + "/") for entry in entry_points(parent)):
        return False
    return not _holds_sources(os.path.join(parent, "src"))


def other_target(package: str, rel: str) -> str | None:
    """Where the folder ``rel`` (relative to the ``package`` folder, inside its published build) holds the build
    for another target than the manifest's own entry point: that entry point (``dist/index.js``), else None."""
    if not _TARGET.match(os.path.basename(rel)):
        return None
    entries = entry_points(package)
    if not entries or any(entry.startswith(rel + "/") for entry in entries[:1]):
        return None
    return entries[0]
