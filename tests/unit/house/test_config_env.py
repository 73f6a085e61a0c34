"""Configuration in one place: kbflow reads no environment variable outside kbflow.config, reads none it does not
list in kbflow.config.env.VARIABLES, and docs/cli.md prints that table."""

from __future__ import annotations

import ast

import pytest
from conftest import REPO

from kbflow.config.env import VARIABLES, env


def _reads(tree: ast.AST) -> list[int]:
    """Lines that read the environment: ``os.environ.get(...)``, ``os.getenv(...)``, ``os.environ[...]`` loaded."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = ast.unparse(node.func)
            if target in ("os.environ.get", "os.getenv"):
                found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value) == "os.environ":
                found.append(node.lineno)
    return found


def test_no_environment_variable_is_read_outside_config():
    readers = {}
    for package in ("kbflow", "kbflow_dagster"):
        for path in (REPO / package).rglob("*.py"):
            if path.is_relative_to(REPO / "kbflow" / "config"):
                continue
            lines = _reads(ast.parse(path.read_text(encoding="utf-8")))
            if lines:
                readers[path.relative_to(REPO).as_posix()] = lines
    assert not readers, f"read the environment through kbflow.config.env: {readers}"


def test_every_variable_read_is_listed_and_documented():
    with pytest.raises(KeyError, match="VARIABLES"):
        env("KBFLOW_NOT_A_SETTING")
    doc = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [v.name for v in VARIABLES if f"| `{v.name}` | {v.default} | {v.sets} |" not in doc]
    assert not missing, f"docs/cli.md's table of environment variables lacks {missing}"
