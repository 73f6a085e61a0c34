"""A lake's versions: every table's history, lake-wide tags (snapshots) and garbage collection.

A tag names one version of every table at once, taken under the lake's lease
so no writer commits between the tables; :meth:`Snapshots.gc` never removes a
tagged version or a table's latest.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kbflow.errors import LakeError
from kbflow.lake.lease import lease
from kbflow.lake.tables import Tables

__all__ = ["Snapshots"]


def _tag_version(info: Any) -> int:
    """The version a Lance tag points at (a dict or an object, by pylance version)."""
    return int(info["version"] if isinstance(info, dict) else info.version)


class Snapshots(Tables):
    """The lake's tables with their versions: history, tags and gc."""

    def history(self) -> dict[str, list[dict[str, Any]]]:
        """Every readable version of every table: ``{table: [{"version", "timestamp", "tags"}]}``."""
        out: dict[str, list[dict[str, Any]]] = {}
        for name in self.table_names():
            ds = self.dataset(name)
            tags: dict[int, list[str]] = {}
            for tag, info in ds.tags.list().items():
                tags.setdefault(_tag_version(info), []).append(tag)
            out[name] = [
                {"version": v["version"], "timestamp": v["timestamp"], "tags": sorted(tags.get(v["version"], []))}
                for v in ds.versions()
            ]
        return out

    def snapshots(self) -> dict[str, dict[str, int]]:
        """Lake snapshots made by :meth:`tag`: ``{tag: {table: version}}``."""
        out: dict[str, dict[str, int]] = {}
        for name in self.table_names():
            for tag, info in self.dataset(name).tags.list().items():
                out.setdefault(tag, {})[name] = _tag_version(info)
        return dict(sorted(out.items()))

    def tag(self, name: str, *, wait: float = 0.0) -> dict[str, int]:
        """Tag the current version of every table ``name``: one consistent snapshot of the whole lake.

        Readers open it with ``Retriever.open(lake, tag=name)``; :meth:`gc` never
        removes tagged versions. Returns ``{table: version}``.
        """
        if not name or not isinstance(name, str) or not all(c.isalnum() or c in "-_." for c in name):
            raise LakeError(f"tag names are letters, digits, '-', '_' and '.', got {name!r}")
        with lease(self.uri, f"kbflow tag {name}", wait=wait):  # no writer between the tables' versions
            if name in self.snapshots():
                raise LakeError(f"{self.uri}: tag {name!r} already exists (see `kbflow versions`)")
            tagged: dict[str, int] = {}
            for table in self.table_names():
                ds = self.dataset(table)
                ds.tags.create(name, ds.version)
                tagged[table] = ds.version
        if not tagged:
            raise LakeError(f"{self.uri}: the lake has no tables yet; run `kbflow ingest` first")
        return tagged

    def gc(
        self, keep: int | None = None, older_than: timedelta | None = None, *, wait: float = 0.0
    ) -> dict[str, dict[str, int]]:
        """Delete old table versions: keep the newest ``keep`` of each table and/or those newer than ``older_than``.

        Tagged versions are always kept, and so is every table's latest
        version. Returns ``{table: {"versions_removed", "bytes_removed"}}``.
        """
        if keep is None and older_than is None:
            raise LakeError("gc needs keep (versions per table) and/or older_than (an age)")
        if keep is not None and keep < 1:
            raise LakeError(f"keep must be >= 1 (the latest version always stays), got {keep}")
        out: dict[str, dict[str, int]] = {}
        with lease(self.uri, "kbflow gc", wait=wait):
            for name in self.table_names():
                ds = self.dataset(name)
                stats = ds.cleanup_old_versions(
                    older_than=older_than if older_than is not None else timedelta(0),
                    retain_versions=keep,
                    error_if_tagged_old_versions=False,
                )
                out[name] = {"versions_removed": int(stats.old_versions), "bytes_removed": int(stats.bytes_removed)}
        return out
