"""A PDF parsing worker: ``python -m kbflow.sources.pdf.worker``.

Reads one task a line on stdin (``{"path": ..., "pages": [1, 2, ...], "ocr": true}``) and
writes one line of results on stdout for each (``[[page, parsed page or null,
error or null], ...]``), until stdin closes. Workers are plain subprocesses,
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
        results = _parse_task(task["path"], task["pages"], task.get("ocr", True))
        sys.stdout.write(json.dumps(results, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
