"""A PDF parsing worker: ``python -m kbflow.sources.pdf.worker``.

Reads one task a line on stdin (``{"path": ..., "pages": [1, 2, ...], "ocr": true,
"tables": true}``) and writes each of its pages on stdout, until stdin closes:
a JSON line ``[page, error or null, [edge line keys], size]`` and then
``size`` bytes, the parsed page pickled (none where it failed), which the
parent spills as they came. Workers are plain subprocesses,
not ``multiprocessing`` children: the parent holds Lance's and torch's threads
(no fork), and a script or notebook calling kbflow needs no ``__main__``
guard (no spawn re-importing it).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")  # the pages go here, and nothing else:
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what a library prints to stdout lands on stderr
    from kbflow.sources.pdf.parse import _parse_task

    for line in sys.stdin:
        task = json.loads(line)
        for number, body, error, edges in _parse_task(task["path"], task["pages"], task["ocr"], task["tables"]):
            out.write(json.dumps([number, error, edges, len(body or b"")]).encode() + b"\n" + (body or b""))
        out.flush()


if __name__ == "__main__":
    main()
