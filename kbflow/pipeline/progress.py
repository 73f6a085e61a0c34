"""Progress bars for long steps (tqdm, on stderr): loading (files, pages) and embedding (chunks).

Both runners use these, so ``kbflow ingest --progress`` shows the same bars
whether Dagster or the library runs the steps.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

__all__ = ["embed_bar", "load_bar"]


@contextlib.contextmanager
def load_bar(source_id: str, show: bool = True) -> Iterator[Callable[[int, int, int], None] | None]:
    """A ``progress(files done, files in all, pages done)`` callback drawing a bar (``None`` if not ``show``)."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=f"load {source_id}", unit="file", file=sys.stderr, leave=False)

    def update(files: int, total: int, pages: int) -> None:
        bar.total = total or None
        bar.n = files
        if pages:
            bar.set_postfix_str(f"{pages} pages", refresh=False)
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


@contextlib.contextmanager
def embed_bar(source_id: str, show: bool = True) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(embedded now, to embed)`` callback drawing a bar (``None`` if not ``show``)."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=f"embed {source_id}", unit="chunk", file=sys.stderr, leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.update(done)

    try:
        yield update
    finally:
        bar.close()
