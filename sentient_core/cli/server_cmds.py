"""``serve``: the learner behind an HTTP API and a live web panel."""

from __future__ import annotations

import argparse
import json
import signal
import sys

from sentient_core.cli.config_cmds import add_config_argument, data_dir_of, load_config

__all__ = ["register"]


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from sentient_core.server import Server, ServerError
    except ImportError as exc:
        print(
            f"error: serve needs the server extra ({exc.name} is missing):"
            " pip install 'sentient-core[server]'",
            file=sys.stderr,
        )
        return 2
    from sentient_core.control import LearnerBusyError

    flags = {}
    if args.host is not None:
        flags["server.host"] = (args.host, "--host")
    if args.port is not None:
        flags["server.port"] = (args.port, "--port")
    effective = load_config(args, flags)
    if effective is None:
        return 2
    try:
        server = Server(data_dir_of(args), effective, log_level=args.log_level)
    except (LearnerBusyError, ServerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # Both are set once Server() returns (None only after close()).
    assert server.host is not None and server.control is not None
    for line in server.host.unsafe:
        print(f"warning: unsafe setting {line}", file=sys.stderr, flush=True)
    login = server.login_url()
    if args.json:
        # One object on one line: a script reads the first line and has everything.
        started = {
            "event": "serving",
            "url": server.url,
            "login_url": login,
            "data_dir": str(server.data_dir),
            "settings": str(effective.path) if effective.path else None,
            "control_socket": str(server.control.path),
            "notice": server.notice,
        }
        print(json.dumps(started), flush=True)
    else:
        print(f"data dir: {server.data_dir}", flush=True)
        if effective.path:
            print(f"settings: {effective.path}", flush=True)
        print(
            f"serving {server.url}  (panel at /, API under /learning, /ask, /recall …)",
            flush=True,
        )
        print(
            f"panel (this link logs in once; `sentient learner login` makes another): {login}",
            flush=True,
        )
        print(server.notice, flush=True)
        print(f"control socket: {server.control.path}", flush=True)
    if args.open:
        import webbrowser

        if not webbrowser.open(login):
            print("warning: no browser could be opened; use the link above", file=sys.stderr)
    server.run()
    how = server.server.signal
    name = signal.Signals(how).name if how else None
    if args.json:
        print(json.dumps({"event": "stopped", "signal": name}), flush=True)
    else:
        print("server stopped" + (f" ({name})" if name else ""), flush=True)
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="HTTP API + live web panel for one learner (loopback by default)",
        description="Host one learner over the data directory: start/pause/resume/stop, status,"
        " a live event stream (SSE), ask/focus/recall/ingest, health and Prometheus metrics,"
        " and the panel at /. Binds 127.0.0.1 by default. Every request but /health needs"
        " the token (DATA_DIR/server.token) or a panel session; the printed panel link logs"
        " a browser in once.",
    )
    p.add_argument("--host", default=None, help="address to bind (default: server.host, 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=None, help="port (default: server.port, 8765; 0 = any free)"
    )
    p.add_argument(
        "--open", action="store_true", help="open the panel's one-time login link in a browser"
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default warning)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the startup line as one JSON object (url, login_url, data_dir, …) and"
        " the stop as another",
    )
    add_config_argument(p)
    p.set_defaults(func=_cmd_serve)
