"""Storage failures as one line naming the lake and the cause: read-only, full, out of quota, gone.

Lance (Rust), SQLite (the Dagster instance beside the lake) and Python's own
file calls each report a full disk or a read-only folder their own way, often
as a long traceback. :func:`storage_error` recognises them all and turns them
into one :class:`~kbflow.errors.LakeStorageError` that says what happened and what
to do; the CLI, the pipeline steps and the Dagster assets all use it.
"""

from __future__ import annotations

import contextlib
import errno
import re
from collections.abc import Callable, Iterator

from kbflow.config.env import env
from kbflow.errors import KbflowError, LakeError, LakeStorageError

__all__ = ["env_storage_options", "storage_error", "storage_errors"]

#: errno -> (what happened, what to do)
_CAUSES = {
    errno.ENOSPC: ("no space left on the device", "free some space, or move the lake (--lake)"),
    errno.EDQUOT: ("the disk quota is used up", "free some space, or move the lake (--lake)"),
    errno.EROFS: ("the file system is read-only", "remount it writable, or point --lake at a writable copy"),
    errno.EACCES: ("permission denied", "make the lake folder writable for this user, or use another --lake"),
    errno.EPERM: ("operation not permitted", "make the lake folder writable for this user, or use another --lake"),
    errno.EIO: ("an input/output error on the device", "check the disk; the lake's committed versions stay readable"),
}
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_TEXTS = {
    "no space left on device": errno.ENOSPC,
    "disk quota exceeded": errno.EDQUOT,
    "read-only file system": errno.EROFS,
    "readonly database": errno.EROFS,
    "attempt to write a readonly database": errno.EROFS,
    "permission denied": errno.EACCES,
    "database or disk is full": errno.ENOSPC,
}


def _errno_of(exc: BaseException) -> int | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _CAUSES:
            return exc.errno
        text = str(exc)
        m = _OS_ERROR.search(text)
        if m and int(m.group(1)) in _CAUSES:
            return int(m.group(1))
        low = text.lower()
        for needle, code in _TEXTS.items():
            if needle in low:
                return code
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]  # None ends the loop
    return None


def storage_error(exc: BaseException, lake_uri: str) -> LakeStorageError | None:
    """A one-line :class:`LakeStorageError` for a storage failure while using the lake at ``lake_uri``, else
    ``None``."""
    if isinstance(exc, KbflowError):
        return None
    code = _errno_of(exc)
    if code is None:
        return None
    what, todo = _CAUSES[code]
    path = getattr(exc, "filename", None)
    where = f" ({path})" if isinstance(path, str) and path and not path.startswith(lake_uri) else ""
    return LakeStorageError(f"{lake_uri}: cannot write the lake{where}: {what} ({errno.errorcode[code]}); {todo}")


@contextlib.contextmanager
def storage_errors(lake_uri: str | Callable[[], str], passing: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Run the ``with`` block; a storage failure in it (:func:`storage_error`) is raised as its one-line
    :class:`LakeStorageError`, every other error (and any of the types ``passing``) as it was. ``lake_uri``
    may be a function giving it (read only when a failure is to be named). What the CLI, the pipeline steps
    and the Dagster assets wrap their writes in."""
    try:
        yield
    except passing:
        raise
    except Exception as exc:
        error = storage_error(exc, lake_uri() if callable(lake_uri) else lake_uri)
        if error is None:
            raise
        raise error from exc


def env_storage_options() -> dict[str, str]:
    """Object-storage options from ``$KBFLOW_STORAGE_OPTIONS`` (a JSON object, e.g. ``{"aws_endpoint": ...,
    "allow_http": "true"}``); the standard ``AWS_*`` variables work without it."""
    raw = env("KBFLOW_STORAGE_OPTIONS")
    if not raw:
        return {}
    import json

    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise LakeError(f"KBFLOW_STORAGE_OPTIONS is not JSON ({exc})") from None
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise LakeError('KBFLOW_STORAGE_OPTIONS must be a JSON object of strings, e.g. {"allow_http": "true"}')
    return options
