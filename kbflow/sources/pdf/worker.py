"""A PDF parsing worker: ``python -m kbflow.sources.pdf.worker``.

Reads one task a line on stdin (``{"path": ..., "pages": [1, 2, ...], "ocr": true,
"tables": true}``) and writes one line on stdout for each of its pages, until
stdin closes: ``[page, error or null, [edge line keys]]``, a tab, and the
parsed page as JSON (nothing where it failed). JSON never holds a raw tab, and
the parent spills the page's JSON as it came. Workers are plain subprocesses,
not ``multiprocessing`` children: the parent holds Lance's and torch's threads
(no fork), and a script or notebook calling kbflow needs no ``__main__``
guard (no spawn re-importing it).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from kbflow.sources.pdf.parse import _parse_task

    for line in sys.stdin:
        task = json.loads(line)
        for number, body, error, edges in _parse_task(task["path"], task["pages"], task["ocr"], task["tables"]):
            sys.stdout.write(f"{json.dumps([number, error, edges])}\t{body or ''}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
