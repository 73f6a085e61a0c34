"""The base install (no extra at all) registers, ingests and searches Markdown, run as a user would: the
``kbflow`` command with every extra's packages unimportable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SAMPLES

from kbflow._lazy import EXTRAS


def test_the_base_install_ingests_text_and_searches_without_any_extra(tmp_path):
    blocked = sorted({top for _, tops in EXTRAS.values() for top in tops} | {"tree_sitter_python"})
    script = tmp_path / "base.py"
    script.write_text(
        "import importlib.abc, sys\n"
        f"BLOCKED = {blocked!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from kbflow.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KBFLOW_LAKE": str(tmp_path / "lake")}

    def kbflow(*args: str) -> str:
        done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    kbflow("add", str(SAMPLES / "docs"), "--type", "docs", "--id", "docs")
    assert "docs" in kbflow("ingest")
    hits = [json.loads(line) for line in kbflow("search", "how do I install it", "-k", "3", "--json").splitlines()]
    assert hits and all(hit["citation"]["source_id"] == "docs" for hit in hits)
