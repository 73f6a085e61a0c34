"""Does a crawl reach the whole site? Each documentation site served over HTTP on loopback, added with ``--crawl
--delay 0`` at the default depth, against the same site loaded from its saved folder.

    python bench/crawl_sites.py                       # the Cargo book and the Rust Reference (mdBook)
    python bench/crawl_sites.py --site NAME=FOLDER    # any saved site (a Sphinx build, a Javadoc set ...)
    python bench/crawl_sites.py --site javadoc=/usr/share/doc/libcommons-lang3-java/api \
        --site doxygen=/usr/share/doc/liblog4cplus-dev/html   # Debian's libcommons-lang3-java-doc, liblog4cplus-doc

For each site it prints the pages the saved folder keeps (kbflow's conventions applied: noindex, print.html,
redirect stubs, a generator's source views and lists of what other pages document left out) with their chunks and
characters, those of them a reader reaches from ``index.html`` by following any link (the crawl's
goal: a page no link leads to cannot be found by following links; the generator's lists of what other pages
document, which a crawl does not follow, and the menu Doxygen's script builds are followed here too), the pages
the crawl kept, and the difference both ways. The Rust Programming Language book beside these sites is held out of
every kbflow measurement and is not offered here.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kbflow import pipeline  # noqa: E402
from kbflow import schema as S  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.lake.sql import sql_str  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.sources.web.links import links_of, menu_links  # noqa: E402


def sysroot_sites() -> dict[str, str]:
    root = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    html = os.path.join(root, "share", "doc", "rust", "html")
    return {"cargo": os.path.join(html, "cargo"), "reference": os.path.join(html, "reference")}


def reachable(folder: str) -> set[str]:
    """The HTML files of ``folder`` a reader reaches from its ``index.html`` by following links of any kind,
    the generator's lists of what other pages document and the menus its scripts build included (read from the
    files: no server, no depth)."""
    seen, todo = set(), ["index.html"]
    while todo:
        rel = todo.pop()
        path = os.path.join(folder, rel)
        if rel in seen or not os.path.isfile(path):
            continue
        seen.add(rel)
        with open(path, encoding="utf-8", errors="replace") as fh:
            links = links_of(fh.read(), f"http://site/{rel}", skip_lists=False)
        for script in [link.url for link in links if link.menu]:
            script_path = os.path.join(folder, script[len("http://site/") :])
            if script.startswith("http://site/") and os.path.isfile(script_path):
                with open(script_path, encoding="utf-8", errors="replace") as fh:
                    links += menu_links(fh.read(), script)
        for link in links:
            if link.url.startswith("http://site/") and not link.menu:
                target = link.url[len("http://site/") :].split("?", 1)[0]
                if os.path.isdir(os.path.join(folder, target)):  # "/docs/api" (Docusaurus): served as its index
                    target = target.rstrip("/") + "/" if target.rstrip("/") else ""
                todo.append(target + "index.html" if target.endswith("/") or not target else target)
    return seen


def size(lake: Lake, source_id: str) -> tuple[int, int]:
    """The chunks of a source and the characters of their text."""
    texts = lake.scan(S.CHUNKS, [S.TEXT], f"{S.SOURCE_ID} = {sql_str(source_id)}").column(0).to_pylist()
    return len(texts), sum(len(t) for t in texts)


def kept(lake: Lake, source_id: str) -> set[str]:
    keys = lake.scan(S.DOCUMENTS, [S.UNIT_KEY], f"{S.SOURCE_ID} = {sql_str(source_id)}").column(0).to_pylist()
    return {k.split("#", 1)[0] for k in keys}


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a fetch that stopped reading at its size limit
            super().handle_error(request, client_address)


def measure(name: str, folder: str) -> None:
    quiet = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    httpd = _Server(("127.0.0.1", 0), functools.partial(quiet, directory=folder))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    os.environ["KBFLOW_FETCH_ALLOW_HOSTS"] = f"127.0.0.1:{port}"
    lake = Lake(os.path.join(tempfile.mkdtemp(prefix="kbflow-crawlbench-"), "lake"))
    lake.register(Source("saved", "web", folder))
    lake.register(Source("crawled", "web", f"http://127.0.0.1:{port}/", options={"crawl": {"delay": 0}}))
    settings = Settings.coerce(None, lake=lake.uri, model="hash:64")
    t0 = time.perf_counter()
    pipeline.ingest(lake, settings)
    took = time.perf_counter() - t0
    httpd.shutdown()
    saved, crawled = kept(lake, "saved"), kept(lake, "crawled")
    goal = saved & reachable(folder)
    print(f"\n{name} ({folder})")
    chunks, characters = size(lake, "saved")
    print(
        f"  saved folder keeps {len(saved)} pages ({chunks:,} chunks, {characters:,} characters of text); "
        f"a reader reaches {len(goal)} of them from index.html"
    )
    print(f"  the crawl kept {len(crawled)} pages ({took:.0f} s for both sources)")
    print(f"  linked pages the crawl missed: {len(goal - crawled)} {sorted(goal - crawled)[:8]}")
    print(f"  pages the crawl kept beyond them: {len(crawled - goal)} {sorted(crawled - goal)[:8]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", action="append", default=[], metavar="NAME=FOLDER")
    args = ap.parse_args()
    sites = dict(s.split("=", 1) for s in args.site) if args.site else sysroot_sites()
    for name, folder in sites.items():
        measure(name, folder)


if __name__ == "__main__":
    main()
