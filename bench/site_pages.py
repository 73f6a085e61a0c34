"""What the web loader keeps of real documentation sites: pages loaded, and pages left out by reason.

    python bench/site_pages.py                       # the mdBook sites rustup installs beside the compiler
    python bench/site_pages.py path/to/saved/site ...

Reads each site with kbflow's web loader (nothing is embedded) and prints, per
site, the pages loaded, how long reading them took (files read, pages
parsed and extracted), and the pages left out grouped by the first words of
their reason (robots noindex, redirect stubs, canonical copies, other files).
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow.records import Source  # noqa: E402
from kbflow.sources.base import get_loader  # noqa: E402

RUSTUP_SITES = ("cargo", "reference", "rust-by-example")


def rustup_sites() -> list[str]:
    if shutil.which("rustc") is None:
        return []
    root = subprocess.check_output(["rustc", "--print", "sysroot"], text=True).strip()
    html = os.path.join(root, "share", "doc", "rust", "html")
    return [os.path.join(html, s) for s in RUSTUP_SITES if os.path.isdir(os.path.join(html, s))]


def main() -> None:
    sites = sys.argv[1:] or rustup_sites()
    if not sites:
        sys.exit("no site given and no rustup documentation found; pass folders of saved HTML pages")
    for site in sites:
        loader = get_loader("web")
        t0 = time.perf_counter()
        units = list(loader.load(Source("site", "web", site)))
        seconds = time.perf_counter() - t0
        reasons = collections.Counter(i.reason.split(" (")[0].split(";")[0] for i in loader.issues)
        left = ", ".join(f"{n} {why}" for why, n in reasons.most_common()) or "none"
        print(
            f"{os.path.basename(site.rstrip('/'))}: {len(units)} pages loaded in {seconds:.1f} s "
            f"({len(units) / seconds:.1f} pages/s); left out: {left}"
        )


if __name__ == "__main__":
    main()
