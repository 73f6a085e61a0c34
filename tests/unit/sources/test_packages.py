"""npm packages published as their build: the build is read once, and a build beside its sources is not."""

from __future__ import annotations

import json
from pathlib import Path

from kbflow.records import Source
from kbflow.sources.base import get_loader
from kbflow.sources.packages import entry_points, other_target, published_build
from kbflow.sources.walk import walk_files

FUNCTION = "export function v4(options) {\n  return options;\n}\n"


def _package(root: Path, manifest: dict | str | None, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    if manifest is not None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        (root / "package.json").write_text(text)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _walk(root: Path) -> tuple[list[str], dict[str, str]]:
    skipped = []
    files = [rel for rel, _ in walk_files(str(root), on_skip=skipped.append)]
    return files, {issue.path: issue.reason for issue in skipped}


def test_a_package_published_as_its_build_is_read_once_per_module(tmp_path):
    manifest = {
        "name": "uuid",
        "main": "./dist/index.js",
        "module": "./dist/esm-node/index.js",
        "exports": {".": {"browser": {"import": "./dist/esm-browser/index.js"}, "default": "./dist/index.js"}},
        "bin": {"uuid": "dist/bin/uuid"},
    }
    files = {f"dist/{d}v4.js": FUNCTION for d in ("", "esm-node/", "esm-browser/", "commonjs-browser/")}
    root = _package(tmp_path / "uuid", manifest, {**files, "dist/index.js": "", "dist/bin/uuid": "#!/bin/sh\n"})
    walked, skipped = _walk(root)
    assert walked == ["dist/bin/uuid", "dist/index.js", "dist/v4.js", "package.json"]
    for target in ("esm-node", "esm-browser", "commonjs-browser"):
        assert skipped[f"dist/{target}/"] == (
            "the same code built for another target (the package's entry point is dist/index.js)"
        )
    units = list(get_loader("repo").load(Source("uuid", "repo", str(root))))
    assert [u.unit_key for u in units if u.content_kind == "code"] == ["dist/bin/uuid", "dist/v4.js"]


def test_a_build_beside_its_sources_and_an_unnamed_build_are_left_out(tmp_path):
    beside = _package(
        tmp_path / "app", {"main": "dist/index.js"}, {"src/index.ts": FUNCTION, "dist/index.js": FUNCTION}
    )
    walked, skipped = _walk(beside)
    assert walked == ["package.json", "src/index.ts"]
    assert skipped["dist/"] == "vendored, virtualenv or build folder (not walked)"
    unnamed = _package(tmp_path / "lib", {"main": "index.js"}, {"index.js": FUNCTION, "build/index.js": FUNCTION})
    assert _walk(unnamed)[0] == ["index.js", "package.json"]
    no_manifest = _package(tmp_path / "bare", None, {"dist/index.js": FUNCTION})
    assert _walk(no_manifest)[0] == []


def test_a_manifest_that_is_not_json_or_points_outside_names_nothing(tmp_path):
    broken = _package(tmp_path / "broken", "{not json", {"dist/index.js": FUNCTION})
    assert entry_points(str(broken)) == ()
    assert not published_build(str(broken), "dist")
    outside = _package(tmp_path / "outside", {"main": "../dist/index.js", "types": "/abs/x.d.ts"}, {})
    assert entry_points(str(outside)) == ()
    listed = _package(tmp_path / "listed", ["dist/index.js"], {})
    assert entry_points(str(listed)) == ()
    named = _package(tmp_path / "named", {"main": "dist/cjs/index.js", "module": "dist/esm/index.js"}, {})
    assert other_target(str(named), "dist/esm") == "dist/cjs/index.js"
    assert other_target(str(named), "dist/cjs") is None
    assert other_target(str(named), "dist/helpers") is None  # not a target's name


def test_an_edited_manifest_is_read_again(tmp_path):
    """A server refreshing a source sees a manifest edited since its last walk (the read is cached per version)."""
    import os

    root = _package(tmp_path / "pkg", {"main": "dist/index.js"}, {"dist/index.js": FUNCTION})
    assert entry_points(str(root)) == ("dist/index.js",)
    (root / "package.json").write_text(json.dumps({"main": "lib/main.js", "module": "dist/esm/index.js"}))
    stat = os.stat(root / "package.json")
    os.utime(root / "package.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert entry_points(str(root)) == ("lib/main.js", "dist/esm/index.js")
    assert _walk(root)[0] == ["dist/index.js", "package.json"]
