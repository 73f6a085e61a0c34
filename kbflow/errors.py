"""The kbflow exception tree.

Every error kbflow raises on purpose derives from :class:`KbflowError`, and
each also derives from the builtin that fits, so callers can catch either::

    KbflowError
    ├── ConfigError(ValueError)            bad setting or parameter
    ├── SourceError(ValueError)            a source cannot be registered or loaded
    │   ├── SourceNotFoundError(KeyError)  no source with that id in the registry
    │   └── SourceConflictError            the id or path is another source's (HTTP 409)
    ├── LakeError(RuntimeError)            the lake cannot be opened or written
    │   ├── LakeNotFoundError(FileNotFoundError)
    │   ├── LakeBusyError                  another process holds the lake's write lease
    │   ├── VersionNotFoundError(KeyError) no such table version or tag (HTTP 404)
    │   └── LakeStorageError               the lake's storage is full, read-only or failing
    ├── EmbedError(RuntimeError)           an embedding or reranking model cannot be loaded or run
    ├── ClusterError(RuntimeError)         the Ray cluster cannot be reached or used (--engine ray)
    ├── QueryError(ValueError)             a bad search request
    ├── ResolveError(ValueError)           a citation cannot be resolved back to its text
    │   ├── StaleCitationError             the source changed since it was indexed
    │   └── UnsafeFileError                the cited file left its source's folder, or is no file (HTTP 409)
    ├── DatasetError(ValueError)           an evaluation dataset or sweep file is malformed
    ├── AuthError(PermissionError)         a service request without a valid API key (HTTP 401)
    │   └── AccessDeniedError              a valid key outside its scope or role (HTTP 403)
    ├── NotFoundError(KeyError)            no chunk (or other item) with that id (HTTP 404)
    ├── OverloadedError(RuntimeError)      the server runs as many searches as it can; retry (HTTP 503)
    ├── ClaimError(ValueError)             a claim without evidence, or bad evidence (kbflow.claims)
    │   └── ClaimTransitionError           a lifecycle transition the claim's status does not allow
    └── MissingDependencyError(ImportError)  an optional package is not installed

Messages name the input at fault (file, source id, parameter) and say what to
do about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "AccessDeniedError",
    "AuthError",
    "ClaimError",
    "ClaimTransitionError",
    "ClusterError",
    "ConfigError",
    "DatasetError",
    "EmbedError",
    "KbflowError",
    "LakeBusyError",
    "LakeError",
    "LakeNotFoundError",
    "LakeStorageError",
    "MissingDependencyError",
    "NotFoundError",
    "OverloadedError",
    "QueryError",
    "ResolveError",
    "SourceError",
    "SourceNotFoundError",
    "SourceConflictError",
    "StaleCitationError",
    "UnsafeFileError",
    "VersionNotFoundError",
]


class KbflowError(Exception):
    """Root of every error kbflow raises on purpose."""


class ConfigError(KbflowError, ValueError):
    """A setting or parameter has a value kbflow cannot use."""


class SourceError(KbflowError, ValueError):
    """A source cannot be registered or loaded (names the file and the reason)."""


class SourceNotFoundError(SourceError, KeyError):
    """No source with the given id is registered in the lake."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class SourceConflictError(SourceError):
    """The source id or path asked for is held by another source (or by one in a scope the caller cannot edit)."""


class LakeError(KbflowError, RuntimeError):
    """The lake cannot be opened, read or written."""


class LakeNotFoundError(LakeError, FileNotFoundError):
    """The lake (or one of its tables) does not exist yet."""


class LakeBusyError(LakeError):
    """Another process is writing the lake (holds its write lease); the message names it."""


class VersionNotFoundError(LakeError, KeyError):
    """A table version or lake tag that does not exist (the message says where to list them)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class LakeStorageError(LakeError):
    """The lake's storage refused a write: full, read-only, out of quota or failing (one line says which)."""


class EmbedError(KbflowError, RuntimeError):
    """An embedding model or cross-encoder reranker cannot be loaded or run."""


class ClusterError(KbflowError, RuntimeError):
    """The Ray cluster an ingest runs on cannot be reached, cannot read the lake or the model, or lost its workers."""


class QueryError(KbflowError, ValueError):
    """A search request is invalid (empty query, k out of range, unknown filter value)."""


class ResolveError(KbflowError, ValueError):
    """A citation cannot be resolved back to the text it points at."""


class StaleCitationError(ResolveError):
    """The source no longer holds the text a citation was indexed with.

    ``indexed_text`` is the text as indexed and ``current_text`` what the
    source holds at the locator now (either ``None`` where unknown: the region
    or the file is gone); ``indexed_at`` is when the source was last indexed.
    """

    def __init__(
        self,
        message: str,
        current_text: str | None = None,
        indexed_text: str | None = None,
        indexed_at: datetime | None = None,
    ) -> None:
        super().__init__(message)
        self.current_text = current_text
        self.indexed_text = indexed_text
        self.indexed_at = indexed_at


class UnsafeFileError(ResolveError):
    """A source file read at serve or resolve time is no longer a regular file inside its source's folder: it
    was swapped for a symbolic link that leads elsewhere, or for a folder or device. Nothing is read from it."""


class DatasetError(KbflowError, ValueError):
    """An evaluation dataset (BEIR layout), stored run or sweep file is missing or malformed."""


class MissingDependencyError(KbflowError, ImportError):
    """An optional dependency is missing; the message names the pip install that fixes it."""


class AuthError(KbflowError, PermissionError):
    """A request to ``kbflow serve`` carries no API key, or one that is unknown or revoked."""


class AccessDeniedError(AuthError):
    """A valid API key asked for something outside its scope or beyond its role."""


class NotFoundError(KbflowError, KeyError):
    """No chunk (or other item) with the given id in the lake."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class OverloadedError(KbflowError, RuntimeError):
    """``kbflow serve`` is running as many searches as it admits and its queue is full (HTTP 503, with
    ``Retry-After``); ``retry_after`` is the seconds it asked the caller to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ClaimError(KbflowError, ValueError):
    """A claim cannot be stored as asked: no evidence, evidence of the wrong type, a bad field (kbflow.claims)."""


class ClaimTransitionError(ClaimError):
    """A lifecycle transition the claim's current status does not allow (or another writer got there first).

    ``claim_id``, ``current`` and ``wanted`` name the claim and both statuses; ``allowed`` lists the
    statuses the claim may move to from ``current``.
    """

    def __init__(self, message: str, claim_id: str, current: str, wanted: str, allowed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.claim_id = claim_id
        self.current = current
        self.wanted = wanted
        self.allowed = allowed
