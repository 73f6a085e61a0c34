"""What every per-source step shares: the filter selecting a source's rows, and how a failure is recorded."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from kbflow import schema as S
from kbflow.errors import KbflowError, LakeError, SourceError, SourceNotFoundError
from kbflow.lake.sql import sql_str
from kbflow.lake.storage import storage_errors

__all__ = ["records_failure", "source_filter"]

F = TypeVar("F", bound=Callable[..., Any])


def source_filter(source_id: str) -> str:
    """The Lance filter selecting one source's rows."""
    return f"{S.SOURCE_ID} = {sql_str(source_id)}"


def records_failure(step: F) -> F:
    """Decorate a per-source step ``step(lake, source_id, ...)``: a :class:`KbflowError` marks the source
    ``failed`` with the error in the registry (what every runner reports), then is raised as a
    :class:`SourceError` naming the source. Tables other than the registry are left as they were.

    A storage failure (full disk, read-only lake) is the lake's, not the source's: it is raised as one
    :class:`~kbflow.errors.LakeError` line (:func:`kbflow.lake.storage.storage_error`) and stops the run."""

    @functools.wraps(step)
    def run(lake: Any, source_id: str | None, *args: Any, **kwargs: Any) -> Any:
        try:
            with storage_errors(lake.uri):  # a storage failure is the lake's, not the source's: it stops the run
                return step(lake, source_id, *args, **kwargs)
        except KbflowError as exc:
            if source_id is None or isinstance(exc, (SourceNotFoundError, LakeError)):
                raise
            message = str(exc)
            prefix = f"source {source_id!r}: "
            if message.startswith(prefix):
                message = message[len(prefix) :]
            lake.set_status({source_id: {S.STATUS: S.FAILED, S.LAST_ERROR: message}})
            raise SourceError(prefix + message) from exc

    return run  # type: ignore[return-value]  # the wrapper has fn's signature
