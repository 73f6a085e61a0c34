"""A file's role in its repository (kbflow.retrieve.roles): read from paths, per source."""

from __future__ import annotations

from kbflow.retrieve.roles import (
    AROUND,
    BUILD,
    CODE,
    MIN_BUNDLED,
    PROSE,
    ROLES,
    TEST,
    TRANSLATIONS,
    TYPINGS,
    describe,
    file_roles,
)


def _roles(files: list[tuple[str, str, str]]) -> dict[str, int]:
    sources, paths, kinds = zip(*files, strict=True)
    return dict(zip(paths, file_roles(sources, paths, kinds), strict=True))


def test_the_files_around_a_repositorys_code_are_told_from_the_code():
    roles = _roles(
        [
            ("pkg", "src/index.ts", "code"),
            ("pkg", "src/range.js", "code"),
            ("pkg", "README.md", "doc"),
            ("pkg", "docs/guide.md", "doc"),
            ("pkg", "test/range.js", "code"),
            ("pkg", "src/range.test.js", "code"),
            ("pkg", "src/jvmTest/kotlin/PipeTest.kt", "code"),
            ("pkg", "lib/FooTest.java", "code"),
            ("pkg", "pkg/test_parse.py", "code"),
            ("pkg", "index.d.ts", "code"),
            ("pkg", "stubs/mod.pyi", "code"),
            ("pkg", "dist/index.js", "code"),
            ("pkg", "dist/esm/range.min.js", "code"),
            ("pkg", "dist/extra.js", "code"),
            ("pkg", "esm/locale/ru.js", "code"),
        ]
    )
    assert roles["src/index.ts"] == roles["src/range.js"] == CODE
    assert roles["README.md"] == roles["docs/guide.md"] == PROSE
    assert {roles[p] for p in ("test/range.js", "src/range.test.js", "src/jvmTest/kotlin/PipeTest.kt")} == {TEST}
    assert roles["lib/FooTest.java"] == roles["pkg/test_parse.py"] == TEST
    assert roles["index.d.ts"] == roles["stubs/mod.pyi"] == TYPINGS
    # a build is a build of modules the source holds outside it; a module only the build holds is code
    assert roles["dist/index.js"] == roles["dist/esm/range.min.js"] == BUILD
    assert roles["dist/extra.js"] == CODE
    assert roles["esm/locale/ru.js"] == TRANSLATIONS
    assert AROUND == {PROSE, TEST, TYPINGS, BUILD, TRANSLATIONS}


def test_names_that_only_look_like_tests_are_code():
    roles = _roles([("r", p, "code") for p in ("latest/x.js", "a/contest/x.py", "Latest.java", "contest.py")])
    assert set(roles.values()) == {CODE}


def test_a_source_without_code_keeps_its_documents_and_a_package_published_as_its_build_keeps_it():
    roles = _roles(
        [
            ("docs", "README.md", "doc"),
            ("docs", "guide/install.md", "doc"),
            ("uuid", "dist/v4.js", "code"),
            ("uuid", "dist/esm-node/v4.js", "code"),
            ("uuid", "wrapper.mjs", "code"),
            ("uuid", "README.md", "doc"),
        ]
    )
    assert roles["guide/install.md"] == CODE
    assert roles["dist/v4.js"] == roles["dist/esm-node/v4.js"] == roles["wrapper.mjs"] == CODE
    # the same path is read per source: the docs source's README is its content, uuid's stands around its code
    sources, paths = ("docs", "uuid", "uuid"), ("README.md", "README.md", "dist/v4.js")
    assert file_roles(sources, paths, ("doc", "doc", "code")) == [CODE, PROSE, CODE]


def test_a_sites_translated_pages_rank_below_their_originals_and_a_short_folder_name_is_no_language():
    # Rust by Example's way: every page again under es/, ja/, zh-CN/; a chapter folder fn/ mirrors nothing
    pages = [
        "index.html",
        "hello.html",
        "fn.html",
        "fn/closures.html",
        "fn/methods.html",
        "flow.html",
        "api/index.html",
    ]
    for lang in ("es", "zh-CN", "pt_BR"):
        pages += [f"{lang}/{p}" for p in ("index.html", "hello.html", "fn.html", "fn/closures.html")]
    pages += ["it/only-here.html", "it/also-here.html", "ja/index.html", "ja/hello.html"]  # too few twins
    roles = dict(zip(pages, file_roles(["site"] * len(pages), pages, ["web"] * len(pages))))
    assert {p for p, r in roles.items() if r == TRANSLATIONS} == {
        f"{lang}/{p}"
        for lang in ("es", "zh-CN", "pt_BR")
        for p in ("index.html", "hello.html", "fn.html", "fn/closures.html")
    }
    assert roles["fn/closures.html"] == roles["api/index.html"] == roles["it/only-here.html"] == CODE
    # a folder that has twins for fewer than half its pages is a section of its own, not a translation
    half = ["a.html", "b.html", "c.html"] + [
        f"de/{p}" for p in ("a.html", "b.html", "c.html", "x.html", "y.html", "z.html", "w.html")
    ]
    assert TRANSLATIONS not in file_roles(["s"] * len(half), half, ["doc"] * len(half))
    # each source is read alone: another source's root is no twin
    assert (
        file_roles(
            ["a", "a", "a", "b", "b", "b"], ["x.md", "y.md", "z.md", "es/x.md", "es/y.md", "es/z.md"], ["doc"] * 6
        )
        == [CODE] * 6
    )


def test_a_hit_says_where_its_file_stands_on_the_page_and_in_the_cli():
    from kbflow.records import Citation, Hit, Locator
    from kbflow.service.web.pages import _role

    cite = Citation("uuid", "repo", "/u", Locator("code", path="dist/v4.js", line_start=1, line_end=9))
    built = Hit(1, 1.0, "c", "t", cite, "code", "global", role="build")
    assert describe("build") == "a build beside its sources, ranked below the code"
    assert "a build beside its sources" in _role(built)
    assert _role(Hit(1, 1.0, "c", "t", cite, "code", "global")) == ""  # the code itself says nothing
    assert {describe(ROLES[r]) for r in AROUND} == {  # every role ranked below the code has its words
        "prose beside the code, ranked below the code",
        "a test, ranked below the code",
        "typings without bodies, ranked below the code",
        "a build beside its sources, ranked below the code",
        "a translation, ranked below the original",
    }


def test_a_bundle_of_its_sources_modules_is_a_build_wherever_it_lies():
    """lodash ships each function in a file of its own and all of them again in ``lodash.js``."""
    names = [f"fn{i}" for i in range(MIN_BUNDLED)]
    paths = ["lodash.js", "core.js", "utils.js", *(f"{n}.js" for n in names), "test/a.test.js"]
    defines = [
        {*names, "runInContext"},  # every module again (``runInContext.fn0``: its symbols' last parts)
        set(names[:-1]),  # one short of MIN_BUNDLED
        set(names),  # but in another source
        *({n} for n in names),  # each module defines its own function, which is no bundle
        set(names),  # a test calling them all is a test
    ]
    sources = ["lodash", "lodash", "other", *(["lodash"] * MIN_BUNDLED), "lodash"]
    roles = dict(zip(paths, file_roles(sources, paths, ["code"] * len(paths), defines), strict=True))
    assert roles["lodash.js"] == BUILD
    assert roles["core.js"] == roles["utils.js"] == roles["fn0.js"] == CODE
    assert roles["test/a.test.js"] == TEST
    assert file_roles(sources, paths, ["code"] * len(paths))[0] == CODE  # no symbols given: no bundle told
