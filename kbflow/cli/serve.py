"""Serving people and agents: ``kbflow serve``, ``mcp``, ``insights`` and the API ``keys``."""

from __future__ import annotations

import json

import click

from kbflow._lazy import require
from kbflow.cli.options import _lake_option, _settings, for_terminal

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _service(ctx: click.Context, no_log: bool, source_roots: tuple[str, ...] = ()):
    from kbflow.service.core import Service

    return Service(_settings(ctx).lake, log_queries=not no_log, source_roots=source_roots or None)


@click.command()
@_lake_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (needs API keys off loopback).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--no-mcp", is_flag=True, help="Serve only the REST API (no MCP at /mcp).")
@click.option("--no-web", is_flag=True, help="No web page at / (the REST API and MCP only).")
@click.option("--no-log", "no_log", is_flag=True, help="Do not add searches to the lake's query log.")
@click.option(
    "--source-root",
    "source_roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder under which local sources may be added over HTTP (web page, REST); repeatable "
    "[default: the current directory].",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    envvar="KBFLOW_ALLOW_HOSTS",
    metavar="NAME[:PORT]",
    help="Another Host name the server answers to (it answers to 127.0.0.1, localhost and [::1] on its port); "
    "repeatable, or space-separated in $KBFLOW_ALLOW_HOSTS; '*' turns the check off (behind a proxy).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    envvar="KBFLOW_ALLOW_ORIGINS",
    metavar="URL",
    help="Another site allowed to write and to read with CORS (https://app.example.com); repeatable, "
    "or space-separated in $KBFLOW_ALLOW_ORIGINS.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes over the one lake, each with its own model (memory grows with each).",
)
@click.option(
    "--max-searches",
    type=click.IntRange(0, 1024),
    default=None,
    help="Searches run at once per process; past them a few wait and the rest get 503 with Retry-After "
    "(0: no bound) [default: the cores, shared among the workers].",
)
@click.option(
    "--queue",
    type=click.IntRange(0, 4096),
    default=None,
    help="Searches that may wait for a slot, per process [default: twice --max-searches].",
)
@click.pass_context
def serve(
    ctx, host, port, no_mcp, no_web, no_log, source_roots, allow_hosts, allow_origins, workers, max_searches, queue
) -> None:
    """Serve the lake: a web page at /, the REST API under /v1 (OpenAPI at /docs), MCP at /mcp.

    \b
    With API keys in the lake (`kbflow keys create`), every request needs one
    (Authorization: Bearer kbf_...; a browser signs in at /login). Without
    any, the server is local and trusted: it binds to 127.0.0.1 only.

    \b
    Other sites open in the same browser are kept out: the server answers only
    to its own Host names (421 otherwise), refuses writes whose Origin is not
    its own (403), takes JSON only on the API and a CSRF token on every form,
    and registers local folders over HTTP only under --source-root.

    \b
    Under load it runs --max-searches searches at once per process, lets
    --queue more wait, and answers the rest 503 with Retry-After at once.
    Query and citation logs are written when it stops, and rows older than
    the lake's retention (90 days; $KBFLOW_LOG_DAYS) are dropped hourly.
    """
    app = require("kbflow.service.app")
    service = _service(ctx, no_log, source_roots)
    service.retriever()  # fail now, not on the first request, if the lake has no search table
    if not service.keys.enabled:
        if host not in _LOOPBACK:
            raise click.UsageError(
                f"no API keys in {service.lake.uri}: without keys kbflow serve binds to 127.0.0.1 only; "
                "create one with `kbflow keys create --scope SCOPE --role reader|editor`"
            )
        click.echo("no API keys in this lake: serving on the loopback address only, without authentication", err=True)
    parts = ("" if no_web else "web page /, ") + "REST /v1, OpenAPI /docs" + ("" if no_mcp else ", MCP /mcp")
    click.echo(f"serving {service.lake.uri} at http://{host}:{port} ({parts})", err=True)
    click.echo(
        "answering to Host "
        + ", ".join(_host_names(host, port, allow_hosts))
        + "; local sources over HTTP only under "
        + ", ".join(service.source_roots),
        err=True,
    )
    options = app.ServeOptions(
        lake=service.lake.uri,
        settings=service.settings.to_dict(),
        log_queries=not no_log,
        source_roots=tuple(service.source_roots),
        mcp=not no_mcp,
        web=not no_web,
        host=host,
        allow_hosts=tuple(allow_hosts),
        allow_origins=tuple(allow_origins),
        max_searches=max_searches,
        queue=queue,
        workers=workers,
    )
    app.serve(options, port, service if workers == 1 else None)


def _host_names(host: str, port: int, allow_hosts: tuple[str, ...]) -> list[str]:
    policy = require("kbflow.service.security").Policy.of(host)
    return [f"{name}:{port}" for name in policy.own_names()] + list(allow_hosts)


@click.command()
@_lake_option
@click.option("--no-log", "no_log", is_flag=True, help="Do not add searches to the lake's query log.")
@click.pass_context
def mcp(ctx, no_log) -> None:
    """Serve the MCP tools over stdio, for desktop agents (knowledge_search, resolve_citation, list_sources).

    \b
    Configure your agent to run:  kbflow --lake /abs/path/to/lake mcp
    """
    import signal

    run_stdio = require("kbflow.service.mcp").run_stdio
    from kbflow import usage

    def stop(_signum, _frame) -> None:
        raise SystemExit(0)  # an agent that stops its server with SIGTERM: the log is still written, below

    service = _service(ctx, no_log)
    service.retriever()
    usage.write_at_once()  # an agent kills its server seconds after closing the pipe: no row waits for a batch
    signal.signal(signal.SIGTERM, stop)
    try:
        run_stdio(service)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the write short
        usage.flush()  # the agent closed the pipe: its searches are in the log before the process ends


@click.command()
@_lake_option
@click.option("--since", default="7d", show_default=True, help="Window: 7d, 12h, 30m, an ISO date, or 'all'.")
@click.option("--top", type=click.IntRange(1, 1000), default=20, show_default=True, help="Rows per table.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def insights(ctx, since, top, as_json) -> None:
    """What was asked and cited: top queries, content gaps (no hit or no good match), most and never
    cited sources, searches per origin with latency."""
    from kbflow.lake import Lake
    from kbflow.usage.insights import insights as report

    settings = _settings(ctx)
    lake = Lake(settings.lake, create=False)
    out = report(lake, None if since == "all" else since, top=top, log_days=settings.log_days)
    if as_json:
        click.echo(json.dumps(out.to_dict(), default=str))
        return
    click.echo(for_terminal(out.to_markdown()))  # the queries are anyone's text


@click.group()
def keys() -> None:
    """API keys for `kbflow serve`: a scope and a role (reader or editor) each, stored hashed in the lake."""


@keys.command("create")
@_lake_option
@click.option(
    "--scope", required=True, help="The scope path the key reaches (and everything under it); 'global' for all."
)
@click.option("--role", type=click.Choice(["reader", "editor"]), default="reader", show_default=True)
@click.option("--name", default=None, help="A label, e.g. who holds the key.")
@click.pass_context
def keys_create(ctx, scope, role, name) -> None:
    """Create a key; it is printed once (only its hash is stored)."""
    from kbflow.lake import Lake
    from kbflow.usage.keys import create_key

    key, token = create_key(Lake(_settings(ctx).lake), scope, role, name=name)
    click.echo(token)
    click.echo(f"key {key.key_id}: {key.role} of scope {key.scope}; store it now, it is not shown again", err=True)


@keys.command("list")
@_lake_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@click.pass_context
def keys_list(ctx, as_json) -> None:
    """List keys (never their secrets)."""
    from kbflow.lake import Lake
    from kbflow.usage.keys import list_keys

    for key in list_keys(Lake(_settings(ctx).lake, create=False)):
        if as_json:
            click.echo(json.dumps(key.to_dict()))
        else:
            state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
            click.echo(f"{key.key_id}  {key.role:<6}  {key.scope}  {state}  {key.name or ''}".rstrip())


@keys.command("revoke")
@_lake_option
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx, key_id) -> None:
    """Revoke KEY_ID (a running server stops accepting it within seconds)."""
    from kbflow.lake import Lake
    from kbflow.usage.keys import revoke_key

    key = revoke_key(Lake(_settings(ctx).lake, create=False), key_id)
    click.echo(f"revoked {key.key_id} ({key.role} of scope {key.scope})")
