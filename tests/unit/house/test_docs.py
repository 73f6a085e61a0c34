"""The README is a short tour and the rest of the documentation lives under docs/: every page the README
lists exists, and every relative link of every page resolves to a file of the repo."""

import re
from pathlib import Path

from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "deploy" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code blocks hold no links
    return [m.group(1) for m in LINK.finditer(text)]


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in _links(page):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_the_readme_is_a_short_tour_that_links_every_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # a tour read in a few minutes: the quick start, the tour, the pages (each page holds the rest)
    assert len(readme.splitlines()) <= 200
    sections = [line for line in readme.splitlines() if line.startswith("## ")]
    assert sections == ["## Quick start", "## A tour", "## Documentation"], sections
    listed = {t.split("#")[0] for t in _links(REPO / "README.md") if t.startswith("docs/")}
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert pages <= listed, sorted(pages - listed)
    assert "make demo" in readme and "make test" in readme
