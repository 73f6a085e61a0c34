"""How much of an API reference's text is copied members, read as the web loader reads it.

Reads every page of a generated API reference (a folder of HTML) with kbflow's
web extractor, and prints the pages, their characters, and how many pointer
lines stand for copied members ("Members documented on", "Documented on",
"Inherited from", "inherited from"). Run it with two checkouts to compare:

    PYTHONPATH=/path/to/older python bench/copied_members.py /usr/share/doc/liblog4cplus-dev/html
    python bench/copied_members.py /usr/share/doc/liblog4cplus-dev/html

(Debian's ``liblog4cplus-doc`` is a Doxygen reference of a C++ class hierarchy:
``apt-get install liblog4cplus-doc``.) ``--glob`` picks the pages
(default ``class*.html``, without Doxygen's ``-members.html`` lists).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kbflow.sources.web import extract

POINTERS = re.compile(r"Members documented on|Documented on |Inherited from |inherited from ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--glob", default="class*.html")
    args = parser.parse_args()
    pages = [p for p in sorted(args.folder.glob(args.glob)) if not p.name.endswith("-members.html")]
    if not pages:
        raise SystemExit(f"no pages match {args.glob} in {args.folder}")
    chars = lines = 0
    for page in pages:
        text = extract(page.read_text(encoding="utf-8", errors="replace")).text
        chars += len(text)
        lines += len(POINTERS.findall(text))
    print(f"{len(pages)} pages, {chars:,} characters, {lines} pointer lines for copied members")


if __name__ == "__main__":
    main()
