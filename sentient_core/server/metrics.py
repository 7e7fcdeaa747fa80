"""``GET /metrics``: the learner's counters in the Prometheus text format.

Exposed through ``prometheus_client`` (the reference client: it owns the text
format, label and help escaping, and the content type) with a registry of this
server's own, filled at scrape time from one status read — never the
process-global registry, which would outlive one server in tests and mix two
servers in one process.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from sentient_core.autonomy.funnel import funnel, promotion_gates
from sentient_core.control import LearnerStatus

__all__ = ["CONTENT_TYPE", "render_metrics"]

STATES = ("idle", "running", "pausing", "paused", "stopping")


class _Out:
    """The metric families of one scrape."""

    def __init__(self) -> None:
        self.families: list[Metric] = []

    def metric(
        self, name: str, kind: str, help_text: str, samples: Iterable[tuple[dict, float]]
    ) -> None:
        samples = list(samples)
        labels = sorted({k for tags, _ in samples for k in tags})
        family_type = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = family_type(f"sentient_{name}", help_text, labels=labels)
        for tags, value in samples:
            family.add_metric([str(tags.get(k, "")) for k in labels], float(value))
        self.families.append(family)

    def one(self, name: str, kind: str, help_text: str, value: float) -> None:
        self.metric(name, kind, help_text, [({}, value)])

    def text(self) -> str:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families(self.families))
        return generate_latest(registry).decode()


class _Families:
    """A collector that yields families already built (one scrape's)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return iter(self.families)


def render_metrics(
    status: LearnerStatus,
    *,
    events_published: int,
    audit_commits: int,
    stream_clients: int,
    stream_sent: int,
    refused: dict[str, int],
    sessions_started: int,
    panel_sessions: int = 0,
    disconnects: int = 0,
    degraded: int = 0,
) -> str:
    """The exposition text for one scrape."""
    o = _Out()
    o.metric(
        "learner_state",
        "gauge",
        "1 for the learner's current state",
        [({"state": s}, 1.0 if status.state == s else 0.0) for s in STATES],
    )
    o.one(
        "sessions_started_total",
        "counter",
        "learner sessions started by this server",
        sessions_started,
    )
    st = status.stats
    for name, value, text in (
        ("iterations", st.iterations, "iterations run"),
        ("iterations_skipped", st.skipped, "iterations skipped (intensity below threshold)"),
        ("queries", st.queries, "requests handed to the chaperone"),
        ("ingested_chunks", st.ingested, "chunks learned"),
        ("concepts", st.concepts, "successful initiatives"),
        ("refused", st.refused, "requests refused by safety"),
        ("failed", st.failed, "requests that failed"),
        ("budget_stops", st.budget_stops, "initiatives or ticks the budget refused"),
    ):
        o.one(f"session_{name}", "gauge", f"this session: {text}", value)
    o.metric(
        "session_outcomes",
        "gauge",
        "this session: judge verdicts by outcome",
        [({"outcome": k}, v) for k, v in sorted(st.outcomes.items())],
    )
    o.metric(
        "session_gate",
        "gauge",
        "this session: initiatives passed and vetoed at each gate of the loop, in order",
        [
            ({"gate": g.gate, "result": result}, value)
            for g in (*funnel(st), *promotion_gates(st))
            for result, value in (("passed", g.passed), ("vetoed", g.vetoed))
        ],
    )
    o.one("memory_traces", "gauge", "active traces in memory", status.memory["traces"])
    o.one("observer_coherence", "gauge", "oscillator coherence", status.observer["coherence"])
    o.metric(
        "smf_axis",
        "gauge",
        "SMF orientation by axis",
        [({"axis": k}, v) for k, v in status.observer["smf"].items()],
    )
    today = status.budget["today"]
    o.one("budget_tokens_today", "gauge", "tokens spent this UTC day", today["tokens"])
    o.one("budget_tool_calls_today", "gauge", "tool calls this UTC day", today["tool_calls"])
    o.metric(
        "budget_cap",
        "gauge",
        "budget caps (0 = unlimited)",
        [({"cap": k}, v) for k, v in sorted(status.budget["caps"].items())],
    )
    gates = status.gates
    o.metric(
        "safety_check_fired",
        "counter",
        "safety refusals by check (this session)",
        [({"check": k}, v) for k, v in sorted(gates["safety"].items())],
    )
    o.metric(
        "chaperone_requests",
        "counter",
        "chaperone counters (this session)",
        [({"counter": k}, v) for k, v in sorted(gates["chaperone"].items()) if isinstance(v, int)],
    )
    o.metric(
        "curiosity_gaps",
        "counter",
        "gaps found by type (this session)",
        [({"type": k}, v) for k, v in sorted(gates["curiosity"].items())],
    )
    o.one("events_published_total", "counter", "events published on the bus", events_published)
    o.one(
        "audit_flush_commits_total",
        "counter",
        "audit-log commits made by the flusher",
        audit_commits,
    )
    o.one("stream_clients", "gauge", "connected live-stream clients", stream_clients)
    o.one("stream_events_sent_total", "counter", "events sent to stream clients", stream_sent)
    o.metric(
        "http_refused_total",
        "counter",
        "requests refused by the security layer",
        [({"status": k}, v) for k, v in sorted(refused.items())],
    )
    o.one("panel_sessions", "gauge", "live panel sessions", panel_sessions)
    o.one(
        "http_disconnects_total",
        "counter",
        "requests whose client went away before the response",
        disconnects,
    )
    o.one("degraded", "gauge", "reasons the server is degraded (0: healthy)", degraded)
    return o.text()
