"""``config show``: the effective settings and where each value came from."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_config_argument", "data_dir_of", "load_config", "register"]


def data_dir_of(args: argparse.Namespace) -> Path:
    """``--data-dir``, else ``$SENTIENT_HOME``, else the user data dir."""
    from sentient_core.store import default_data_dir

    return Path(args.data_dir) if args.data_dir is not None else default_data_dir()


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--config PATH`` to a sub-command."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="PATH",
        help="settings file (default: DATA_DIR/sentient.toml if it exists)",
    )


def load_config(args: argparse.Namespace, flags: dict[str, tuple[Any, str]] | None = None):
    """The :class:`~sentient_core.config.Effective` settings, or None after printing the error."""
    from sentient_core.config import ConfigError, load

    try:
        return load(data_dir_of(args), path=args.config, flags=flags)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return None


def _cmd_config_show(args: argparse.Namespace) -> int:
    effective = load_config(args)
    if effective is None:
        return 2
    rows = effective.rows()
    if args.json:
        out: dict[str, Any] = {"file": effective.path or None, "values": {}}
        for key, value, source in rows:
            section, name = key.split(".", 1)
            out["values"].setdefault(section, {})[name] = {"value": value, "source": source}
        print(json.dumps(out, indent=2))
        return 0
    print(f"settings file: {effective.path or '(none: defaults, environment and flags)'}")
    width = max(len(k) for k, _, _ in rows)
    section = ""
    for key, value, source in rows:
        if key.split(".")[0] != section:
            section = key.split(".")[0]
            print(f"[{section}]")
        print(f"  {key:<{width}}  {json.dumps(value):<28} {source}")
    for line in effective.unsafe():
        print(f"warning: unsafe: {line}", file=sys.stderr)
    return 0


def register(sub, common: argparse.ArgumentParser) -> None:
    """Add this module's sub-commands to ``sub``."""
    cfg = sub.add_parser("config", help="the effective settings (flag > env > file > defaults)")
    verbs = cfg.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    show = verbs.add_parser(
        "show",
        parents=[common],
        help="print every setting, its value and where it came from",
        description="Effective settings: a flag beats the environment, which beats the file"
        " (DATA_DIR/sentient.toml or --config), which beats the defaults.",
    )
    add_config_argument(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=_cmd_config_show)
