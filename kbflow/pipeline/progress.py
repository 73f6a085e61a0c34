"""Progress bars for long steps (tqdm, on stderr): loading (files, pages) and embedding (chunks).

Both runners use these, so ``kbflow ingest --progress`` shows the same bars
whether Dagster or the library runs the steps.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from kbflow.sources.base import LoadProgress

__all__ = ["embed_bar", "load_bar"]


@contextlib.contextmanager
def load_bar(source_id: str, show: bool = True) -> Iterator[LoadProgress | None]:
    """A ``progress(files done, files in all, pages done, OCR pages done)`` callback drawing a bar (``None`` if
    not ``show``); pages are shown with their rate (``1,204 pages, 31.5 pages/s, 12 by OCR``)."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=f"load {source_id}", unit="file", file=sys.stderr, leave=False)
    start = time.perf_counter()

    def update(files: int, total: int, pages: int, ocr_pages: int, /) -> None:
        bar.total = total or None
        bar.n = files
        if pages:
            rate = pages / max(time.perf_counter() - start, 1e-6)
            ocr = f", {ocr_pages:,} by OCR" if ocr_pages else ""
            bar.set_postfix_str(f"{pages:,} pages, {rate:.1f} pages/s{ocr}", refresh=False)
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
