"""The ``kbflow`` command: register sources, ingest them through Dagster, search with citations.

Every command takes ``--lake URI`` (default ``$KBFLOW_LAKE`` or ``./data/lake``);
the source registry lives in the lake, so the commands work from any directory.
"""

from __future__ import annotations

from typing import Any

import click

from kbflow.errors import KbflowError

#: exit status when another process holds the lake's write lease (EX_TEMPFAIL: try again later)
EXIT_BUSY = 75


class _Failure(click.ClickException):
    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class; each failure has its own


class _Group(click.Group):
    """Turns every KbflowError into a one-line ``Error: ...`` and exit status 1 (75: the lake is busy)."""

    def invoke(self, ctx: click.Context) -> Any:
        from kbflow.config import resolve_lake
        from kbflow.errors import LakeBusyError
        from kbflow.lake.storage import storage_errors

        try:  # a full disk or read-only lake: one line, not a traceback
            clicks = (click.ClickException, click.exceptions.Exit, click.Abort)
            with storage_errors(lambda: resolve_lake((ctx.obj or {}).get("lake")), passing=clicks):
                return super().invoke(ctx)
        except LakeBusyError as exc:
            raise _Failure(str(exc), EXIT_BUSY) from None
        except KbflowError as exc:
            raise _Failure(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--lake",
    envvar="KBFLOW_LAKE",
    default=None,
    metavar="URI",
    help="The lake: a folder or any Lance URI. Default: $KBFLOW_LAKE, else ./data/lake.",
)
@click.version_option(package_name="kbflow")
@click.pass_context
def main(ctx: click.Context, lake: str | None) -> None:
    """kbflow: turn a corpus into cited, versioned, searchable knowledge.

    \b
    Quick start:
      kbflow add docs/ --type docs --scope myproject
      kbflow add . --type repo --id self --scope myproject
      kbflow ingest
      kbflow search "where are ranks fused" -k 5
    """
    from kbflow.lake.malloc import limit_malloc_arenas

    limit_malloc_arenas()  # before Lance starts its threads: freed memory stays reusable (see kbflow.lake.malloc)
    ctx.ensure_object(dict).setdefault("lake", lake)


def _add_groups() -> None:
    from kbflow.cli import claims, eval, ingest, lake, relations, search, serve, sources  # noqa: F401 (relations: claims commands)

    for command in (
        sources.add,
        ingest.ingest,
        search.search,
        search.resolve,
        sources.status,
        sources.remove,
        sources.rename,
        lake.tag,
        lake.versions,
        lake.gc,
        serve.serve,
        serve.mcp,
        serve.insights,
        serve.keys,
        eval.eval_command,
        claims.claims_command,
    ):
        main.add_command(command)


_add_groups()

if __name__ == "__main__":  # pragma: no cover
    main()
