"""A file's role in its repository: the code itself, or what stands around it (prose, tests, typings, a build).

A question about code ("check whether a version falls inside a range") is
answered by the function that does it. In a repository, the README that lists
every function in a sentence, the test that calls it, the TypeScript typings
that declare it and the ``dist/`` build that repeats it all share its words,
and on npm packages as published they ranked above the function for a third
of the questions (``bench/jssearch``). So the role signal
(``RetrievalSettings.role_weight``, :mod:`kbflow.retrieve.signals`) ranks the
files around the code a little below the code: each of their chunks loses
``role_weight`` of the best candidate's normalized score. A README that
matches far better than any function still comes first.

Roles are read from paths (a bundle also from the names its file defines), per
source, and only in a source that holds code:
a folder of Markdown is all prose, and its prose is its content.

- ``code``: the source files (and every file of a source without code);
- ``prose``: the documents and data files of a source that holds code
  (README, CHANGELOG, CONTRIBUTING, ``docs/``, ``locale.json``);
- ``test``: files under ``test/``, ``tests/``, ``__tests__/``, ``spec/`` or a
  Gradle test source set (``jvmTest/``, ``androidTest/``), and ``test_*.py``,
  ``*_test.py``, ``*_test.go``, ``*.test.js``, ``*.spec.ts``,
  ``FooTest.java``, ``conftest.py``;
- ``typings``: declarations without bodies (``*.d.ts``, ``*.pyi``);
- ``build``: a build beside its sources: a file under ``dist/``, ``build/``
  or ``out/`` whose module (its file name without extensions) the source
  also holds outside them (``dist/index.js`` beside ``src/index.ts``); a
  package published as its ``dist/`` alone keeps it as its code. A bundle
  is a build too, wherever it lies: a file that defines at least
  :data:`MIN_BUNDLED` functions named as modules its source also holds
  (lodash's ``lodash.js`` defines ``debounce`` and ``chunk``, which
  ``debounce.js`` and ``chunk.js`` hold one to a file);
- ``translations``: code under ``locale/``, ``locales/``, ``i18n/``,
  ``l10n/`` or ``translations/``: a language's month names and plural
  rules, whose words match every question about what they translate.

One role reaches a source without code too: a site or folder of documents
that also ships its pages translated, each language in a folder named by it
(``es/``, ``zh-CN/``, ``pt_BR/``) holding the source's own pages again
(Rust by Example ships four: 788 of its 985 pages). A language folder whose
pages mostly have a twin at the source's root (the same path without the
folder; at least :data:`MIN_TWINS`, and at least half its pages) is
``translations``: its pages rank a share below the originals, whose code
and names they repeat. A folder that merely has a short name (``fn/``,
``api/``) mirrors nothing and keeps its pages' rank.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

__all__ = ["AROUND", "CODE", "MIN_BUNDLED", "MIN_TWINS", "ROLES", "describe", "file_roles"]

#: role codes, in :data:`ROLES` order
ROLES = ("code", "prose", "test", "typings", "build", "translations")
CODE, PROSE, TEST, TYPINGS, BUILD, TRANSLATIONS = range(len(ROLES))
#: the roles ranked below the code
AROUND = frozenset({PROSE, TEST, TYPINGS, BUILD, TRANSLATIONS})
#: what a hit says of its file, for each role ranked below the code
_SAYS = {
    "prose": "prose beside the code",
    "test": "a test",
    "typings": "typings without bodies",
    "build": "a build beside its sources",
    "translations": "a translation",
    "pointer": "a pointer to documentation elsewhere",  # a chunk's role (kbflow.retrieve.pointers)
}

_TEST = re.compile(
    r"(?:^|/)(?:[Tt]ests?|TESTS?|__tests__|[Ss]pecs?|[Tt]esting)/|(?:^|/)[a-z][a-z0-9]*Tests?/"
    r"|(?:^|/)test_[^/]*\.py$|_test\.(?:py|go|rb|exs?)$|(?:^|/)conftest\.py$"
    r"|\.(?:test|spec)\.[cm]?[jt]sx?$|(?:^|/)[^/]*Tests?\.(?:java|kt|cs|scala|swift)$"
)
_TYPINGS = re.compile(r"\.d\.[cm]?ts$|\.pyi$")
_BUILD = re.compile(r"(?:^|/)(?:dist|build|out)/")
_TRANSLATIONS = re.compile(r"(?:^|/)(?:locales?|i18n|l10n|translations)/", re.IGNORECASE)
#: a folder named by a language tag: ``es``, ``zh-CN``, ``pt_BR``, ``zh-Hans``, ``es-419``
_LANGUAGE = re.compile(r"^[a-z]{2,3}(?:[-_](?:[A-Za-z]{2}|[A-Z][a-z]{3}|\d{3}))?$")
#: a language folder mirrors its source where at least this many of its pages (and half of them) have a twin
MIN_TWINS = 3
#: a file that defines at least this many functions named as its source's other modules is a bundle of them
MIN_BUNDLED = 20


def _module(path: str) -> str:
    """A file's module: its name without folders and extensions (``dist/esm/index.min.js``: ``index``)."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _translated(sources: Sequence[str], paths: Sequence[str | None]) -> set[tuple[str, str]]:
    """``(source, folder)`` of each language folder that mirrors its source: at least :data:`MIN_TWINS` of its
    files, and at least half, have a twin at the source's root (the same path without the folder)."""
    files = {(source, path or "") for source, path in zip(sources, paths, strict=True)}
    counts: dict[tuple[str, str], list[int]] = {}
    for source, path in files:
        folder, slash, rest = path.partition("/")
        if slash and _LANGUAGE.match(folder):
            count = counts.setdefault((source, folder), [0, 0])
            count[0] += 1
            count[1] += (source, rest) in files
    return {key for key, (n, twins) in counts.items() if twins >= MIN_TWINS and 2 * twins >= n}


def _bundles(
    sources: Sequence[str], paths: Sequence[str | None], kinds: Sequence[str], defines: Sequence[Collection[str]]
) -> set[tuple[str, str]]:
    """``(source, path)`` of each file that defines at least :data:`MIN_BUNDLED` functions named as modules of
    its source other than its own (``defines``: the names each file defines, the last part of each symbol). The
    modules are its source's code files outside a build folder, not tests or typings named after a function."""
    modules = {
        (source, _module(path or ""))
        for source, path, kind in zip(sources, paths, kinds, strict=True)
        if kind == "code" and not any(rule.search(path or "") for rule in (_BUILD, _TEST, _TYPINGS))
    }
    out = set()
    for source, path, names in zip(sources, paths, defines, strict=True):
        own = _module(path or "")
        if len(names) >= MIN_BUNDLED and sum(n != own and (source, n) in modules for n in names) >= MIN_BUNDLED:
            out.add((source, path or ""))
    return out


def file_roles(
    sources: Sequence[str],
    paths: Sequence[str | None],
    kinds: Sequence[str],
    defines: Sequence[Collection[str]] | None = None,
) -> list[int]:
    """The role code (:data:`ROLES`) of each file, given as parallel ``sources``, ``paths``, content ``kinds``
    and, for bundles, the names of the functions each file ``defines`` (the last part of its chunks' symbols;
    ``None``: none are told apart); one entry per file. A source's files are read together, since prose is
    prose only beside code and a build is a build only beside its sources."""
    has_code: set[str] = set()
    modules: set[tuple[str, str]] = set()  # (source, module) of the code outside a build folder
    for source, path, kind in zip(sources, paths, kinds, strict=True):
        if kind == "code":
            has_code.add(source)
            if not _BUILD.search(path or ""):
                modules.add((source, _module(path or "")))
    translated = _translated(sources, paths)
    bundles = _bundles(sources, paths, kinds, defines) if defines is not None else set()
    out = []
    for source, path, kind in zip(sources, paths, kinds, strict=True):
        path = path or ""
        if source not in has_code:
            out.append(TRANSLATIONS if (source, path.partition("/")[0]) in translated else CODE)
        elif kind != "code":
            out.append(PROSE)
        elif _TEST.search(path):
            out.append(TEST)
        elif _TYPINGS.search(path):
            out.append(TYPINGS)
        elif (_BUILD.search(path) and (source, _module(path)) in modules) or (source, path) in bundles:
            out.append(BUILD)
        elif _TRANSLATIONS.search(path):
            out.append(TRANSLATIONS)
        else:
            out.append(CODE)
    return out


def describe(role: str) -> str:
    """What a search shows for a hit whose file has ``role`` (``Hit.role``): ``"a build beside its sources,
    ranked below the code"``."""
    below = {"translations": "the original", "pointer": "the page's own text"}.get(role, "the code")
    return f"{_SAYS.get(role, role)}, ranked below {below}"
