"""Effective settings from four layers: flag > environment > file > defaults.

The file is ``sentient.toml`` in the data directory (or ``--config PATH``),
read with :mod:`tomllib` and validated by msgspec against
:class:`~sentient_core.config.schema.Settings`: an unknown key or a bad value
is a :class:`ConfigError` naming the key and the file. Environment variables
(:data:`ENV_VARS`) are parsed to the key's type; an unparsable one is an error
naming the variable. Every value remembers where it came from
(:attr:`Effective.sources`), which ``config show`` prints.
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from sentient_core.autonomy.budget import CAP_ENV, BudgetCaps
from sentient_core.config.schema import ConfigError, SafetySection, Settings, check_safety
from sentient_core.events import EventBus, UnsafeSettingEvent
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.safety import DEFAULT_ALLOWED_DOMAINS, SafetyPolicy
from sentient_core.learning.session import LearnerSettings, incoming_dir

__all__ = ["CONFIG_NAME", "ENV_VARS", "Effective", "load", "log_unsafe"]

CONFIG_NAME = "sentient.toml"
"""The config file's name inside a data directory."""

SECTIONS = ("learner", "chaperone", "safety", "budget", "server", "judge", "search")


def _env_vars() -> dict[str, str]:
    """``section.key`` → environment variable, for every key that has one."""
    out: dict[str, str] = {}
    for section in ("learner", "chaperone", "server", "judge", "search"):
        cls = type(getattr(Settings(), section))
        for key in cls.__struct_fields__:
            if key in ("corpus_dirs", "allowed_hosts"):
                continue  # lists come from the file or flags
            out[f"{section}.{key}"] = f"SENTIENT_{section.upper()}_{key.upper()}"
    for cap, var in CAP_ENV.items():  # the budget keeps its documented names
        out[f"budget.{cap}"] = var
    return out


ENV_VARS: dict[str, str] = _env_vars()
"""Environment variable of each key that has one (safety keys come from the file only)."""


class Effective(msgspec.Struct, frozen=True, kw_only=True):
    """The settings in force and where each value came from.

    Attributes
    ----------
    settings : Settings
    sources : dict
        ``"section.key"`` → ``"default"``, ``"file PATH"``, ``"env VAR"`` or ``"flag --x"``.
    path : str
        The config file read ("" when there was none).
    """

    settings: Settings
    sources: dict[str, str]
    path: str = ""

    def unsafe(self) -> list[str]:
        """``key = value (source)`` of every ``unsafe_`` key set to something other than off."""
        out = []
        s = self.settings.safety
        for key in SafetySection.__struct_fields__:
            value = getattr(s, key)
            if key.startswith("unsafe_") and value:
                out.append(f"safety.{key} = {value!r} ({self.sources[f'safety.{key}']})")
        return out

    def rows(self) -> list[tuple[str, Any, str]]:
        """``(key, value, source)`` for every key, in section order."""
        out = []
        for section in SECTIONS:
            part = getattr(self.settings, section)
            for key in part.__struct_fields__:
                name = f"{section}.{key}"
                out.append((name, msgspec.to_builtins(getattr(part, key)), self.sources[name]))
        return out

    def learner_settings(self, data_dir: str | os.PathLike[str], session: str) -> LearnerSettings:
        """A :class:`LearnerSettings` for a session over ``data_dir``."""
        s = self.settings
        lr, ch, sf = s.learner, s.chaperone, s.safety
        incoming = incoming_dir(data_dir)
        corpus = [str(Path(d).expanduser().resolve()) for d in ch.corpus_dirs]
        extra = [str(Path(d).expanduser().resolve()) for d in sf.allowed_dirs]
        domains = tuple(sf.allowed_domains or DEFAULT_ALLOWED_DOMAINS) + sf.unsafe_extra_domains
        policy = SafetyPolicy(
            incoming_dir=str(incoming),
            allowed_read_dirs=tuple(dict.fromkeys((str(incoming), *corpus, *extra))),
            allowed_domains=domains,
            https_only=not sf.unsafe_allow_http,
            allow_private_addresses=sf.unsafe_allow_private_addresses,
            allow_hardlinks=sf.unsafe_allow_hardlinks,
            max_bytes=sf.unsafe_max_bytes or sf.max_bytes,
            max_files_per_session=sf.unsafe_max_files_per_session or sf.max_files_per_session,
            rate_limit_requests=sf.unsafe_rate_limit_requests or sf.rate_limit_requests,
            rate_limit_window_s=sf.rate_limit_window_s,
        )
        llm = None
        if ch.llm_url:
            llm = LLMConfig(
                base_url=ch.llm_url,
                model=ch.model,
                timeout_s=ch.timeout_s,
                deadline_s=ch.deadline_s,
                question_deadline_s=ch.question_deadline_s,
            )
        return LearnerSettings(
            learner=LearnerConfig(
                interval_s=lr.interval_s,
                max_iterations=lr.max_iterations,
                reflect_every=lr.reflect_every,
                commit_routes=lr.commit_routes,
                condense=lr.condense,
                recipes=lr.recipes,
                skill_repair=lr.skill_repair,
                use_wisdom=lr.use_wisdom,
                repair_budget=lr.repair_budget,
                field_gaps=lr.field_gaps,
                link_gaps=lr.link_gaps,
                session=session,
            ),
            llm=llm,
            safety=policy,
            caps=BudgetCaps(**msgspec.to_builtins(s.budget)),
            corpus_dirs=tuple(corpus),
            include_python_docs=ch.include_python_docs,
            user_share=ch.user_share,
            judge=s.judge,
            search=s.search,
        )


_AT = re.compile(r" - at `\$\.?([^`]*)`")
_UNKNOWN = re.compile(r"Object contains unknown field `([^`]+)`")


_MISSING = object()


def _explain(exc: msgspec.ValidationError, where: str, raw: Any = None) -> ConfigError:
    """A msgspec error as ``KEY: problem, got VALUE (WHERE)``."""
    text = str(exc)
    m = _AT.search(text)
    path = m.group(1) if m else ""
    problem = _AT.sub("", text)
    u = _UNKNOWN.match(problem)
    if u:
        key = f"{path}.{u.group(1)}" if path else u.group(1)
        return ConfigError(f"unknown key {key} ({where})")
    value = _value_at(raw, path) if raw is not None and path else _MISSING
    got = "" if value is _MISSING or ", got" in problem else f", got {value!r}"
    return ConfigError(f"{path or 'config'}: {problem}{got} ({where})")


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _field_type(key: str) -> Any:
    section, name = key.split(".", 1)
    return typing.get_type_hints(type(getattr(Settings(), section)), include_extras=True)[name]


def _value_at(raw: Any, path: str) -> Any:
    """The value at a msgspec path such as ``learner.hosts[0]`` (``_MISSING`` if absent)."""
    for part in re.findall(r"[^.\[\]]+", path):
        try:
            raw = raw[int(part)] if isinstance(raw, list) else raw[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return _MISSING
    return raw


def load(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] = os.environ,
    flags: Mapping[str, tuple[Any, str]] | None = None,
) -> Effective:
    """Merge defaults, the config file, the environment and flags.

    Parameters
    ----------
    data_dir : path, optional
        Where ``sentient.toml`` is looked for (a missing one is fine).
    path : path, optional
        ``--config PATH``: this file instead (it must exist).
    env : mapping
    flags : mapping, optional
        ``"section.key"`` → ``(value, "--flag")`` for flags the user gave.

    Raises
    ------
    ConfigError
        Naming the key (or variable) and where the bad value came from.
    """
    file = Path(path) if path is not None else None
    if file is None and data_dir is not None:
        candidate = Path(data_dir) / CONFIG_NAME
        file = candidate if candidate.exists() else None
    elif file is not None and not file.is_file():
        raise ConfigError(f"--config {file}: no such file")
    merged: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    sources = {
        f"{section}.{key}": "default"
        for section in SECTIONS
        for key in type(getattr(Settings(), section)).__struct_fields__
    }
    if file is not None:
        raw = _read_file(file)
        where = f"file {file}"
        try:
            msgspec.convert(raw, Settings)  # unknown keys, types and bounds, named
        except msgspec.ValidationError as exc:
            raise _explain(exc, where, raw) from None
        for section, values in raw.items():
            for key, value in values.items():
                merged[section][key] = value
                sources[f"{section}.{key}"] = where
    for key, var in ENV_VARS.items():
        raw_value = env.get(var)
        if raw_value is None or not raw_value.strip():
            continue
        try:
            value = msgspec.convert(raw_value.strip(), _field_type(key), strict=False)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"{var}={raw_value!r} ({key}): {_AT.sub('', str(exc))}") from None
        section, name = key.split(".", 1)
        merged[section][name] = value
        sources[key] = f"env {var}"
    for key, (value, flag) in (flags or {}).items():
        section, name = key.split(".", 1)
        merged[section][name] = value
        sources[key] = f"flag {flag}"
    try:
        settings = msgspec.convert(merged, Settings)
    except msgspec.ValidationError as exc:
        err = _explain(exc, "effective settings", merged)
        m = re.match(r"(\w+\.\w+)", str(err))
        if m and m.group(1) in sources:
            err = ConfigError(str(err).replace("effective settings", sources[m.group(1)]))
        raise err from None
    problems = check_safety(settings.safety)
    lr = settings.learner
    if lr.iterations > lr.max_iterations:
        problems.append(
            f"learner.iterations = {lr.iterations} is more than learner.max_iterations"
            f" = {lr.max_iterations}"
        )
    if settings.chaperone.llm_url and not settings.chaperone.llm_url.startswith(
        ("http://", "https://")
    ):
        problems.append(
            f"chaperone.llm_url = {settings.chaperone.llm_url!r}: expected an http(s) base URL"
            " such as http://localhost:1234/v1"
        )
    if problems:
        detail = [f"{p} ({sources.get(p.split(' ')[0].rstrip(':'), 'config')})" for p in problems]
        raise ConfigError("; ".join(detail))
    return Effective(settings=settings, sources=sources, path=str(file) if file else "")


def log_unsafe(effective: Effective, bus: EventBus, session: str = "") -> list[str]:
    """Publish one :class:`UnsafeSettingEvent` per loosened check; returns their lines."""
    emitter = bus.emitter(session=session)
    lines = effective.unsafe()
    s = effective.settings.safety
    for key in SafetySection.__struct_fields__:
        value = getattr(s, key)
        if key.startswith("unsafe_") and value:
            emitter.emit(
                UnsafeSettingEvent,
                key=f"safety.{key}",
                value=repr(msgspec.to_builtins(value)),
                source=effective.sources[f"safety.{key}"],
            )
    return lines
