"""Scrape-time metrics of agent sessions and of each node's capacity.

Both are read from probes the owner binds (a :class:`~assay.sessions.SessionManager`, an
executor), once per scrape, so the numbers come from one consistent snapshot and nothing on
the hot path keeps a gauge up to date. A probe that raises loses its samples for that scrape
(logged), never the whole scrape.

Node capacity carries a ``node`` label so the same series serve one machine and a cluster:
the local executor exports one node (:func:`node_name`), a cluster executor one per node it
feeds (its probe returns one :class:`NodeCapacity` each).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ._specs import SPECS

__all__ = ["NodeCapacity", "SessionStats", "node_name"]

log = logging.getLogger(__name__)


def node_name() -> str:
    """The ``node`` label of this machine: ``ASSAY_NODE_NAME`` if set (a pod's node name,
    say), else the host name."""
    return os.environ.get("ASSAY_NODE_NAME") or socket.gethostname()


@dataclass(frozen=True, slots=True)
class SessionStats:
    """The session gauges at one moment (see the ``assay_sessions_*`` metrics)."""

    open: int
    busy: int
    max_sessions: int
    memory_limit_bytes: int
    oldest_age_s: float
    past_ttl: int
    ending: int
    steps: int
    ended: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """One node's capacity now: ``slots`` sandbox workers, ``slots_busy`` of them running a
    job, its memory budget for jobs and the part of it held by running jobs."""

    node: str
    slots: int
    slots_busy: int
    memory_budget_bytes: int
    memory_reserved_bytes: int
    up: bool = True


SessionProbe = Callable[[], SessionStats]
NodeProbe = Callable[[], Iterable[NodeCapacity]]

_SESSION_GAUGES = (
    ("assay_sessions_open", "open"),
    ("assay_sessions_busy", "busy"),
    ("assay_sessions_max", "max_sessions"),
    ("assay_sessions_memory_limit_bytes", "memory_limit_bytes"),
    ("assay_sessions_oldest_age_seconds", "oldest_age_s"),
    ("assay_sessions_past_ttl", "past_ttl"),
    ("assay_sessions_ending", "ending"),
)
_NODE_GAUGES = (
    ("assay_node_up", "up"),
    ("assay_node_slots", "slots"),
    ("assay_node_slots_busy", "slots_busy"),
    ("assay_node_memory_budget_bytes", "memory_budget_bytes"),
    ("assay_node_memory_reserved_bytes", "memory_reserved_bytes"),
)


def _gauge(name: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, SPECS[name].help, labels=labels)


class SessionGauges(Collector):
    """``assay_sessions_*`` gauges and the step counter, from a session manager's probe.

    No sample is exported until a manager binds (an executor without sessions has no session
    series, so the dashboard can tell "no sessions open" from "no sessions here").
    """

    def __init__(self) -> None:
        self.probe: SessionProbe | None = None

    def describe(self) -> Iterable[Metric]:
        return self._families()

    @staticmethod
    def _families() -> list[Metric]:
        steps = CounterMetricFamily("assay_session_steps", SPECS["assay_session_steps_total"].help)
        return [*(_gauge(name) for name, _ in _SESSION_GAUGES), steps]

    def collect(self) -> Iterable[Metric]:
        families = self._families()
        if self.probe is None:
            return families
        try:
            stats = self.probe()
        except Exception:
            log.warning("sessions probe failed during a metrics scrape", exc_info=True)
            return families
        for family, (_, attr) in zip(families, _SESSION_GAUGES, strict=False):
            family.add_metric([], float(getattr(stats, attr)))  # type: ignore[attr-defined]
        families[-1].add_metric([], float(stats.steps))  # type: ignore[attr-defined]
        return families


class NodeGauges(Collector):
    """``assay_node_*`` gauges, one series per node the probe reports."""

    def __init__(self) -> None:
        self.probe: NodeProbe | None = None

    def describe(self) -> Iterable[Metric]:
        return [_gauge(name, ("node",)) for name, _ in _NODE_GAUGES]

    def collect(self) -> Iterable[Metric]:
        families = [_gauge(name, ("node",)) for name, _ in _NODE_GAUGES]
        if self.probe is None:
            return families
        try:
            nodes = list(self.probe())
        except Exception:
            log.warning("nodes probe failed during a metrics scrape", exc_info=True)
            return families
        for node in nodes:
            for family, (_, attr) in zip(families, _NODE_GAUGES, strict=True):
                family.add_metric([node.node], float(getattr(node, attr)))
        return families


#: ``() -> (depth by priority class, lag by priority class)`` of a queue fleet's broker.
BrokerProbe = Callable[[], tuple[Mapping[str, int], Mapping[str, int]]]


class BrokerGauges(Collector):
    """``assay_fleet_queue_depth`` and ``assay_fleet_queue_lag`` by priority class, read
    from the broker (one round trip) at scrape time."""

    def __init__(self) -> None:
        self.probe: BrokerProbe | None = None

    def describe(self) -> Iterable[Metric]:
        return [_gauge(name, ("priority",)) for name in _BROKER_GAUGES]

    def collect(self) -> Iterable[Metric]:
        depth, lag = (_gauge(name, ("priority",)) for name in _BROKER_GAUGES)
        if self.probe is None:
            return [depth, lag]
        try:
            depths, lags = self.probe()
        except Exception:
            log.warning("broker probe failed during a metrics scrape", exc_info=True)
            return [depth, lag]
        for family, values in ((depth, depths), (lag, lags)):
            for priority, n in values.items():
                family.add_metric([priority], float(n))
        return [depth, lag]


_BROKER_GAUGES = ("assay_fleet_queue_depth", "assay_fleet_queue_lag")
