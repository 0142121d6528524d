"""The queue fleet: a producer (:class:`QueueExecutor`) and workers (``assay worker``,
:class:`Worker`) behind a message broker (:class:`RedisBroker`: Redis Streams with a
consumer group; :class:`InMemoryBroker` for tests). Importing this package imports no Redis
client; a :class:`RedisBroker` does when it is made."""

from __future__ import annotations

from ._redis import RedisBroker
from .broker import PRIORITIES, Broker, Delivery, InMemoryBroker, priority_class
from .executor import QueueExecutor
from .worker import Worker

__all__ = [
    "PRIORITIES",
    "Broker",
    "Delivery",
    "InMemoryBroker",
    "QueueExecutor",
    "RedisBroker",
    "Worker",
    "priority_class",
]
