"""API references as their generators write them: the member's own entry first, never its copies.

    python bench/api_eval.py --build         # build the references first (apt and cargo, offline)
    python bench/api_eval.py                 # every set of bench/apisites
    python bench/api_eval.py --sets indexmap --model hash:64

Each set of ``bench/apisites`` is an API reference a generator wrote (rustdoc
over a crate Debian ships as ``librust-*-dev``, built with ``cargo doc
--offline``; TypeDoc over the declarations an npm package publishes;
Javadoc, Doxygen and Sphinx as Debian ``-doc`` packages ship them; pdoc
and pdoc3 over a package as PyPI publishes it),
loaded as one ``web`` source into its own lake, with 16 questions in a
user's words, each judged by the member that answers it
(``map/struct.IndexMap.html#shift_remove``: the page and the member's name
in the hit's heading path) and members that answer it in part.

Printed per set: the gold member in the top 3 (and top 5), and a gold page
(the member's page, whatever hit of it) in the top 3; questions whose
top 5 holds a text twice, a near-copy twice (the same text once its
headings, which name the owning type, are taken off: a trait's method as
documented on two implementors) or one member twice (its signature and
its "Returns" part as two hits); hits in the top 5 that are a trait's
member as copied onto an implementor (a rustdoc ``Trait Implementations``,
``Auto Trait Implementations`` or ``Blanket Implementations`` section); the
chunks the reference holds and the time the ingest took.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kbflow import pipeline  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.retrieve.distinct import member_path, text_key  # noqa: E402
from kbflow.retrieve.retriever import Retriever  # noqa: E402

SETS = os.path.join(HERE, "apisites")
#: set -> (Debian package, crate folder in /usr/share/cargo/registry): rustdoc references
CRATES = {"indexmap": ("librust-indexmap-dev", "indexmap-1.9.2")}
#: set -> (npm package, its declarations file): TypeDoc references, built from what the package publishes
TYPEDOCS = {"commander-typedoc": ("commander@12.1.0", "typings/index.d.ts")}
#: set -> (Debian package, its Doxygen folder): Doxygen references, as Debian ships them
DOXYGENS = {"log4cplus-doxygen": ("liblog4cplus-doc", "/usr/share/doc/liblog4cplus-dev/html")}
#: set -> (Debian package, its Sphinx folder): Sphinx autodoc references (with inherited members), as Debian ships them
SPHINXES = {"bidict-sphinx": ("python-bidict-doc", "/usr/share/doc/python-bidict-doc/html")}
#: set -> (Debian package, its Javadoc folder, the package whose own pages make the set): Javadoc references
JAVADOCS = {
    "commons-lang3": (
        "libcommons-lang3-java-doc",
        "/usr/share/doc/libcommons-lang3-java/api",
        "org/apache/commons/lang3",
    )
}
#: set -> (the PyPI package, the generator, its modules left out): pdoc and pdoc3 references, built from the
#: package as published (``_winconsole`` is Windows-only: it imports msvcrt; pdoc3 documents no private module)
PDOCS = {
    "click-pdoc": ("click==8.4.0", "pdoc==16.0.0", ["click._winconsole"]),
    "click-pdoc3": ("click==8.4.0", "pdoc3==0.11.6", []),
}
#: TypeDoc and the compiler it runs, pinned
TYPEDOC_TOOLS = ("typedoc@0.26.11", "typescript@5.5.4")
REGISTRY = "/usr/share/cargo/registry"
_MEMBER = re.compile(r"\b(?:fn|type|const)\s+(\w+)")
_GROUPS = frozenset(
    {"Methods", "Properties", "Accessors", "Constructors", "Functions", "Variables", "Method Details", "Field Details"}
)
_NAME = re.compile(r"^(?:Readonly|Optional|Static|Protected|Abstract)*(\w+)")
#: Doxygen titles a member's entry by its name, a function's with ``()`` (``isEnabledFor()``)
_TITLE = re.compile(r"^(~?\w+)(?:\(\))?$")
#: pdoc heads an entry by its signature: ``def add_command(self, ...)``, ``class Group(Command):``, ``name: str``
#: (pdoc3: ``var name : str``)
_PDOC = re.compile(r"^(?:async\s+)?(?:def|class)\s+(?:\w+\.)*(\w+)|^(?:var\s+)?(\w+)\s*(?:[:=]|$)")
#: Sphinx heads an entry by its signature: ``put(key, val)``, ``property inverse: T``, ``exception bidict.KeyError``,
#: ``bidict.ON_DUP_RAISE = OnDup(...)``
_SPHINX = re.compile(
    r"^(?:(?:classmethod|staticmethod|property|abstract|async|exception|class)\s+)*(?:\w+\.)*(\w+)\s*(?:\(|:|=|$)"
)
_PDOC_ENTRY = re.compile(r"^(?:async\s+def|def|class|var)\s+\w+")
_COPIED = ("Trait Implementations", "Auto Trait Implementations", "Blanket Implementations")


def build(name: str) -> str:
    """Build the set's reference into ``bench/apisites/<name>/site``."""
    if name in JAVADOCS:
        return build_javadoc(name)
    if name in DOXYGENS or name in SPHINXES:
        return build_debian_html(name)
    if name in PDOCS:
        return build_pdoc(name)
    return build_typedoc(name) if name in TYPEDOCS else build_rustdoc(name)


def build_javadoc(name: str) -> str:
    """The pages of one Java package's classes, as a Debian ``-doc`` package ships them (its subpackages,
    class-use and tree pages left out: the set asks about the package's own classes)."""
    package, api, folder = JAVADOCS[name]
    if not os.path.isdir(api):
        print(f"installing {package} (apt-get)", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", package], check=True)
    site = os.path.join(SETS, name, "site")
    shutil.rmtree(site, ignore_errors=True)
    os.makedirs(site)
    source = os.path.join(api, folder)
    for page in sorted(os.listdir(source)):
        if page.endswith(".html") and not page.startswith("package-"):
            shutil.copy(os.path.join(source, page), site)
    return site


def build_debian_html(name: str) -> str:
    """A Doxygen or Sphinx reference as a Debian ``-doc`` package ships it, whole (its member lists, indexes and
    source pages are there: kbflow leaves them out as it loads the site)."""
    package, html = {**DOXYGENS, **SPHINXES}[name]
    if not os.path.isdir(html):
        print(f"installing {package} (apt-get)", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", package], check=True)
    site = os.path.join(SETS, name, "site")
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(html, site)
    return site


def build_pdoc(name: str) -> str:
    """pdoc over a package as PyPI publishes it (pip install from the registry into the set's folder, then
    ``pdoc PACKAGE -o site``, offline)."""
    package, tool, left_out = PDOCS[name]
    work = os.path.join(SETS, name, "crate")
    shutil.rmtree(work, ignore_errors=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", work]
    subprocess.run([*pip, package, tool], check=True)
    site = os.path.join(SETS, name, "site")
    shutil.rmtree(site, ignore_errors=True)
    module = re.split(r"[=<>]", package)[0]
    env = {**os.environ, "PYTHONPATH": work}
    if tool.startswith("pdoc3"):  # pdoc3 writes SITE/click/...; --skip-errors: a module that fails to import
        pdoc = [sys.executable, "-m", "pdoc", "--html", "--skip-errors", "--output-dir", site, module]
    else:
        pdoc = [sys.executable, "-m", "pdoc", module, *(f"!{m}" for m in left_out), "--output-directory", site]
    done = subprocess.run(pdoc, env=env, cwd=work, capture_output=True, text=True)  # a warning per odd annotation
    if done.returncode:
        sys.exit(f"pdoc failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return site


def build_typedoc(name: str) -> str:
    """TypeDoc over the declarations an npm package publishes (npm install from the registry, then offline)."""
    package, declarations = TYPEDOCS[name]
    work = os.path.join(SETS, name, "crate")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "src"))
    npm = ["npm", "install", "--prefix", work, "--ignore-scripts", "--no-audit", "--no-fund"]
    subprocess.run([*npm, package, *TYPEDOC_TOOLS], check=True)
    shutil.copy(os.path.join(work, "node_modules", package.split("@")[0], declarations), os.path.join(work, "src"))
    with open(os.path.join(work, "tsconfig.json"), "w", encoding="utf-8") as fh:
        json.dump({"compilerOptions": {"strict": True, "skipLibCheck": True}, "include": ["src"]}, fh)
    site = os.path.join(SETS, name, "site")
    shutil.rmtree(site, ignore_errors=True)
    entry = os.path.join("src", os.path.basename(declarations))
    typedoc = os.path.join("node_modules", ".bin", "typedoc")
    subprocess.run([typedoc, "--entryPoints", entry, "--out", site, "--skipErrorChecking"], cwd=work, check=True)
    return site


def build_rustdoc(name: str) -> str:
    """rustdoc over a crate's sources as Debian ships them (cargo doc --offline)."""
    package, crate = CRATES[name]
    if not os.path.isdir(os.path.join(REGISTRY, crate)):
        print(f"installing {package} (apt-get)", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", package], check=True)
    work = os.path.join(SETS, name, "crate")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(REGISTRY, crate), work)
    manifest = os.path.join(work, "Cargo.toml")
    kept, skip = [], False
    with open(manifest, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("["):
                skip = line.startswith("[dev-dependencies")  # not in the registry, and docs need none
            if not skip:
                kept.append(line)
    with open(manifest, "w", encoding="utf-8") as fh:
        fh.writelines(kept)
    os.makedirs(os.path.join(work, ".cargo"), exist_ok=True)
    with open(os.path.join(work, ".cargo", "config.toml"), "w", encoding="utf-8") as fh:
        fh.write(f'[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "{REGISTRY}"\n')
    subprocess.run(["cargo", "doc", "--offline", "--no-deps", "--quiet"], cwd=work, check=True)
    site = os.path.join(SETS, name, "site")
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(os.path.join(work, "target", "doc"), site)
    return site


def load_set(name: str) -> tuple[dict, dict[str, str], dict[str, dict[str, int]]]:
    """The set's ``sources.json``, its questions and its judgments (``"questions_from"``: another set's, where
    two generators document the same package)."""
    with open(os.path.join(SETS, name, "sources.json"), encoding="utf-8") as fh:
        spec = json.load(fh)
    folder = os.path.join(SETS, spec.get("questions_from", name))
    with open(os.path.join(folder, "queries.jsonl"), encoding="utf-8") as fh:
        queries = {q["_id"]: q["text"] for q in map(json.loads, fh) if q}
    qrels: dict[str, dict[str, int]] = {}
    with open(os.path.join(folder, "qrels", "test.tsv"), encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return spec, queries, qrels


def member_of(hit) -> str:
    """``page#member`` of a hit: its page and the member its heading path ends in (``""`` for none)."""
    loc = hit.citation.locator
    heading = loc.heading_path or ""
    entry = member_path(heading)  # a part of a member's entry (its "Parameters") is the member's
    heading = " > ".join(entry) if entry else heading
    parts = heading.split(" > ")
    last = parts[-1].strip()
    if _PDOC_ENTRY.match(last):  # pdoc, pdoc3: a signature; a class's member named as their anchors name it
        owner = next((_PDOC.match(p.strip()) for p in reversed(parts[:-1]) if p.strip().startswith("class ")), None)
        found = _PDOC.match(last)
        name = next((g for g in found.groups() if g), "") if found else ""
        return f"{loc.path}#{owner.group(1) + '.' if owner else ''}{name}"
    found = _MEMBER.search(last)  # rustdoc: `pub fn shift_remove<Q>(...)`
    groups = [i for i, p in enumerate(parts[:-1]) if p in _GROUPS]
    if found is None and groups:  # TypeDoc, Javadoc: the heading below its group (Methods > addHelpText)
        found = _NAME.match(parts[groups[-1] + 1])
    if found is None:  # Doxygen: the entry's title (Logger Class Reference > isEnabledFor())
        found = _TITLE.match(last)
    if found is None:  # pdoc: a variable's signature (``name: str = ...``); Sphinx: any entry's
        found = _PDOC.match(last) or _SPHINX.match(last)
    name = next((g for g in found.groups() if g), "") if found else ""
    return f"{loc.path}#{name}"


#: a Markdown heading line of a chunk (not a C preprocessor line such as ``#define X 1``)
_HEADING_LINE = re.compile(r"^#{1,6} .*$", re.MULTILINE)


def near_copy_key(text: str) -> str:
    """A chunk's text without its heading lines (which name the owning type): equal for a trait's member
    as documented on two types."""
    body = _HEADING_LINE.sub("", text).strip()
    return text_key(body or text)  # a chunk of headings alone (undocumented members) is no copy of another


def measure(name: str, root: str, settings: Settings) -> dict:
    spec, queries, qrels = load_set(name)
    source = spec["sources"][0]
    path = os.path.join(SETS, name, source["path"])
    if not os.path.isdir(path):
        sys.exit(f"{path}: not built; run python bench/api_eval.py --build")
    lake = Lake(os.path.join(root, f"api-{name}"))
    if source["id"] not in {s.source_id for s in lake.sources()}:
        lake.register(Source(source["id"], "web", path))
    t0 = time.perf_counter()
    pipeline.ingest(lake, settings, progress=False)
    ingest_s = time.perf_counter() - t0
    retriever = Retriever.open(lake.uri, settings=settings)
    top3 = top5 = page_top3 = dup_q = near_q = twice_q = copied_hits = 0
    misses = []
    for qid, text in queries.items():
        gold = {d for d, g in qrels[qid].items() if g > 0}
        hits = retriever.search(text, k=5)
        members = [member_of(h) for h in hits]
        first = next((i for i, m in enumerate(members) if m in gold), None)
        top3 += first is not None and first < 3
        top5 += first is not None
        gold_pages = {d.partition("#")[0] for d in gold}
        page_top3 += any(m.partition("#")[0] in gold_pages for m in members[:3])
        keys = [text_key(h.text) for h in hits]
        near = [near_copy_key(h.text) for h in hits]
        dup_q += len(set(keys)) < len(keys)
        near_q += len(set(near)) < len(near)
        named = [m for m in members if not m.endswith("#")]  # chunks under a member's heading
        twice_q += len(set(named)) < len(named)
        copied_hits += sum(any(s in (h.citation.locator.heading_path or "") for s in _COPIED) for h in hits)
        if first is None or first >= 3:
            misses.append(f"  {qid} {text!r}: gold {sorted(gold)[:2]}, got {members[:3]}")
    return {
        "set": name,
        "questions": len(queries),
        "gold_top3": top3,
        "gold_top5": top5,
        "gold_page_top3": page_top3,
        "repeated_text_questions": dup_q,
        "near_copy_questions": near_q,
        "member_twice_questions": twice_q,
        "copied_member_hits": copied_hits,
        "ingest_s": round(ingest_s, 1),
        "chunks": retriever.rows,  # the lake holds this one source
        "misses": misses,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    every = ",".join([*CRATES, *TYPEDOCS, *JAVADOCS, *DOXYGENS, *PDOCS, *SPHINXES])
    ap.add_argument("--sets", default=every, help="comma-separated sets of bench/apisites")
    ap.add_argument("--build", action="store_true", help="build the references (apt-get, cargo doc --offline)")
    ap.add_argument("--model", default=None, help="embedding model (default: kbflow's)")
    ap.add_argument("--root", default=os.path.join("data", "eval"), help="where the lakes are kept")
    args = ap.parse_args()
    for name in args.sets.split(","):
        if args.build:
            print(f"{name}: built {build(name)}", file=sys.stderr)
        settings = Settings.coerce(None, **({"model": args.model} if args.model else {}))
        row = measure(name, args.root, settings)
        print(
            f"{name}: gold member in top 3 {row['gold_top3']}/{row['questions']}, top 5 {row['gold_top5']} "
            f"(its page in top 3: {row['gold_page_top3']}) | "
            f"repeated text in a top 5: {row['repeated_text_questions']} questions, a near-copy: "
            f"{row['near_copy_questions']}, one member twice: {row['member_twice_questions']} | "
            f"copied members in the top 5s: {row['copied_member_hits']} | "
            f"{row['chunks']:,} chunks, ingest {row['ingest_s']} s"
        )
        for line in row["misses"]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
