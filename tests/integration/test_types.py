"""The type checker: mypy over kbflow/ (configured in pyproject.toml, mypy pinned in the dev extra) finds no
error. A `# type: ignore` needs its error code and a reason beside it."""

from __future__ import annotations

import re

import pytest
from conftest import REPO


def test_mypy_is_clean():
    api = pytest.importorskip("mypy.api", reason="mypy is in the dev extra (make test installs it)")
    stdout, stderr, status = api.run(["--config-file", str(REPO / "pyproject.toml"), str(REPO / "kbflow")])
    if status not in (0, 1):
        pytest.fail(f"mypy did not run: {stderr or stdout}")
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert not errors, "\n".join(errors)


def test_every_type_ignore_names_its_error_and_why():
    bare = []
    for path in sorted((REPO / "kbflow").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            ignore = re.search(r"#\s*type:\s*ignore(\[[\w-]+(?:,\s*[\w-]+)*\])?(.*)", line)
            if ignore and (not ignore.group(1) or "#" not in ignore.group(2)):
                bare.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not bare, bare
