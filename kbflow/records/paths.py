"""Where a cited file is read: the real path of a file inside its source, never a path that leads out of it.

A source's files are indexed where its loader found them, inside the folder
(or the one file) it was registered with; the loader never follows a symbolic
link that leaves it. Whatever reads a source file again later (resolving a
citation, serving the original, drawing a PDF page, checking claims' evidence)
goes through :func:`confined_file`, so a file swapped for a link after ingest
(``docs/deploy.md -> ~/.aws/credentials``) is refused instead of served.
"""

from __future__ import annotations

import os
import stat

from kbflow.errors import UnsafeFileError

__all__ = ["confined_file", "inside"]


def inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both absolute and normalized)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def confined_file(path: str, root: str) -> str:
    """The real path of ``path`` (symbolic links followed), checked to lie inside ``root``.

    ``root`` is the source's registered path: a folder, or the file itself for
    a one-file source. It was stored resolved, so it must still resolve to
    itself; a missing file passes (its reader reports it gone).

    Raises
    ------
    UnsafeFileError
        When ``root`` now resolves elsewhere, ``path`` resolves outside it, or
        ``path`` is no longer a regular file (a folder, a device, a pipe).
    """
    root_abs = os.path.normpath(os.path.abspath(root))
    if os.path.realpath(root_abs) != root_abs:
        raise UnsafeFileError(f"{root}: refused: the source's path is now a symbolic link that leads elsewhere")
    real = os.path.realpath(os.path.join(root_abs, path))
    if not inside(real, root_abs):
        raise UnsafeFileError(f"{path}: refused: it now leads outside its source {root} (a symbolic link)")
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise UnsafeFileError(f"{path}: refused: it cannot be inspected ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise UnsafeFileError(f"{path}: refused: it is no longer a regular file")
    return real
