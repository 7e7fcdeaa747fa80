"""sentient.toml: validated by msgspec, errors name the key, flag > env > file > defaults,
unsafe keys loosen checks only on purpose (and are logged), wired into learn and serve."""

from __future__ import annotations

import json

import pytest

from sentient_core.cli import main
from sentient_core.config import ENV_VARS, ConfigError, load
from sentient_core.events import UnsafeSettingEvent, read_events
from sentient_core.store import Store


def _write(tmp_path, text: str):
    (tmp_path / "sentient.toml").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[learner]\nintervall_s = 3\n", "unknown key learner.intervall_s"),
        ("[learnr]\ninterval_s = 3\n", "unknown key learnr"),
        (
            "[learner]\nmax_iterations = 101\n",
            "learner.max_iterations: Expected `int` <= 100, got 101",
        ),
        ("[learner]\ninterval_s = 'soon'\n", "learner.interval_s: Expected `float`, got `str`"),
        ("[learner]\niterations = 50\nmax_iterations = 20\n", "learner.iterations = 50"),
        ("[budget]\ndaily_tokens = -1\n", "budget.daily_tokens"),
        ("[server]\nport = 70000\n", "server.port"),
        ("[chaperone]\nllm_url = 'localhost:1234'\n", "chaperone.llm_url"),
        ("[safety]\nmax_bytes = 20971520\n", "safety.max_bytes = 20971520 loosens a check"),
        ("[safety]\nrate_limit_requests = 50\n", "use unsafe_rate_limit_requests"),
        ("[safety]\nallowed_domains = ['evil.example']\n", "evil.example not in the built-in"),
        ("[safety]\nrate_limit_window_s = 1\n", "safety.rate_limit_window_s"),
        ("[learner\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_key_and_the_file(tmp_path, text, message):
    _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env={})
    assert message in str(info.value)
    assert str(tmp_path / "sentient.toml") in str(info.value)


def test_precedence_flag_env_file_default(tmp_path):
    _write(tmp_path, "[learner]\ninterval_s = 5\nreflect_every = 4\n[budget]\ndaily_tokens = 7\n")
    env = {"SENTIENT_LEARNER_INTERVAL_S": "6", "SENTIENT_AUTONOMOUS_DAILY_TOKENS": "8"}
    e = load(tmp_path, env=env, flags={"learner.interval_s": (9.0, "--interval")})
    assert e.settings.learner.interval_s == 9.0
    assert e.sources["learner.interval_s"] == "flag --interval"
    assert e.settings.budget.daily_tokens == 8
    assert e.sources["budget.daily_tokens"] == "env SENTIENT_AUTONOMOUS_DAILY_TOKENS"
    assert e.settings.learner.reflect_every == 4
    assert e.sources["learner.reflect_every"].startswith("file ")
    assert e.settings.server.port == 8765 and e.sources["server.port"] == "default"
    no_flag = load(tmp_path, env=env)
    assert no_flag.settings.learner.interval_s == 6.0
    only_file = load(tmp_path, env={})
    assert only_file.settings.learner.interval_s == 5.0
    settings = only_file.learner_settings(tmp_path, "s")
    assert settings.caps.daily_tokens == 7 and settings.learner.interval_s == 5.0
    assert settings.safety.https_only and settings.llm is None


def test_bad_environment_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="SENTIENT_LEARNER_MAX_ITERATIONS='500'"):
        load(tmp_path, env={"SENTIENT_LEARNER_MAX_ITERATIONS": "500"})
    with pytest.raises(ConfigError, match="SENTIENT_SERVER_PORT='http'"):
        load(tmp_path, env={"SENTIENT_SERVER_PORT": "http"})
    assert ENV_VARS["budget.daily_tool_calls"] == "SENTIENT_AUTONOMOUS_DAILY_TOOL_CALLS"
    assert not any(k.startswith("safety.") for k in ENV_VARS)  # safety comes from the file


def test_tightening_is_plain_loosening_needs_unsafe(tmp_path):
    _write(
        tmp_path,
        "[safety]\nallowed_domains = ['en.wikipedia.org', 'docs.python.org']\nmax_bytes = 1024\n"
        "max_files_per_session = 3\nrate_limit_window_s = 120\n",
    )
    e = load(tmp_path, env={})
    policy = e.learner_settings(tmp_path, "s").safety
    assert policy.allowed_domains == ("en.wikipedia.org", "docs.python.org")
    assert policy.max_bytes == 1024 and policy.max_files_per_session == 3
    assert e.unsafe() == []
    _write(
        tmp_path,
        "[safety]\nunsafe_allow_http = true\nunsafe_extra_domains = ['example.org']\n"
        "unsafe_max_bytes = 99999999\n",
    )
    e = load(tmp_path, env={})
    policy = e.learner_settings(tmp_path, "s").safety
    assert not policy.https_only and "example.org" in policy.allowed_domains
    assert policy.max_bytes == 99999999
    assert [u.split(" = ")[0] for u in e.unsafe()] == [
        "safety.unsafe_extra_domains",
        "safety.unsafe_max_bytes",
        "safety.unsafe_allow_http",
    ]


def test_config_show_prints_values_and_sources(tmp_path, capsys, monkeypatch):
    _write(tmp_path, "[learner]\ninterval_s = 2.5\n")
    monkeypatch.setenv("SENTIENT_SERVER_PORT", "9000")
    assert main(["config", "show", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"settings file: {tmp_path / 'sentient.toml'}" in out
    line = next(ln for ln in out.splitlines() if "learner.interval_s" in ln)
    assert "2.5" in line and "file " in line
    assert "env SENTIENT_SERVER_PORT" in next(ln for ln in out.splitlines() if "server.port" in ln)
    assert main(["config", "show", "--json", "--data-dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["values"]["learner"]["interval_s"] == {
        "value": 2.5,
        "source": data["values"]["learner"]["interval_s"]["source"],
    }
    assert data["values"]["server"]["port"] == {"value": 9000, "source": "env SENTIENT_SERVER_PORT"}
    other = tmp_path / "other.toml"
    other.write_text("[learner]\nbogus = 1\n")
    assert main(["config", "show", "--config", str(other), "--data-dir", str(tmp_path)]) == 2
    assert "unknown key learner.bogus" in capsys.readouterr().err
    assert main(["config", "show", "--config", str(tmp_path / "nope.toml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_learn_reads_the_file_and_logs_unsafe_keys(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.md").write_text("Ocean tides follow the moon: its gravity pulls the water.")
    # Only the settings file in a new data directory: the store is still created there.
    (data / "sentient.toml").write_text(
        f"[learner]\ninterval_s = 0\niterations = 2\n[chaperone]\ncorpus_dirs = ['{corpus}']\n"
        "include_python_docs = false\n[safety]\nunsafe_allow_private_addresses = true\n"
    )
    assert main(["learn", "--data-dir", str(data)]) == 0
    captured = capsys.readouterr()
    assert "summary: 2 iteration(s)" in captured.out
    assert f"settings: {data / 'sentient.toml'}" in captured.out
    assert "unsafe setting safety.unsafe_allow_private_addresses = True" in captured.err
    with Store.open(data, readonly=True) as store:
        logged = [e for _, e in read_events(store) if isinstance(e, UnsafeSettingEvent)]
    assert [e.key for e in logged] == ["safety.unsafe_allow_private_addresses"]
    assert main(["learn", "--iterations", "1", "--interval", "0", "--data-dir", str(data)]) == 0
    assert "summary: 1 iteration(s)" in capsys.readouterr().out
    (data / "sentient.toml").write_text("[learner]\nspeed = 3\n")
    assert main(["learn", "--data-dir", str(data)]) == 2
    assert "unknown key learner.speed" in capsys.readouterr().err


def test_the_docs_example_is_a_valid_settings_file(tmp_path):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "config.md").read_text()
    section = doc[doc.index("## The config file") :]
    (example,) = re.findall(r"```toml\n(.*?)```", section, re.S)[:1]
    _write(tmp_path, example)
    e = load(tmp_path, env={})
    assert e.settings.learner.interval_s == 10 and e.settings.safety.max_bytes == 5242880
    assert e.settings.safety.allowed_domains == ("docs.python.org", "en.wikipedia.org")
    assert e.unsafe() == []
