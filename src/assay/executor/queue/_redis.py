"""The broker on Redis Streams (Redis 7 or newer): one stream per priority class read by the
consumer group ``workers``, a hash per batch, a set and a stream of results per batch.

Keys, under a prefix (default ``assay``)::

    {p}:jobs:{class}     stream of jobs (fields b: batch id, i: index, j: the job)
    {p}:batch:{id}       hash: size, deadline (epoch s or ""), at (submitted, epoch s), cancelled
    {p}:att:{id}         hash: index -> attempts started
    {p}:done:{id}        set: indices that have their result
    {p}:out:{id}         stream of results (i: index, r: the result), in arrival order

Queueing a batch and finishing a job are Lua scripts, so each is atomic: the depth check
and the batch's jobs (all or none), and a job's result, its acknowledgement and its removal
from the job stream (so the stream's length is the unfinished jobs). A finished job is
deleted from its stream; the group's lag (``XINFO GROUPS``, what KEDA scales on) still
counts only the unread entries. Every batch key expires ``QUEUE_RESULT_TTL_S`` after its
last change. One Redis instance (or a primary): the scripts touch several keys, which a
Redis Cluster would need in one hash slot.
"""

from __future__ import annotations

from typing import Any

from ... import defaults
from ...errors import ConfigError
from .broker import PRIORITIES, Delivery, QueueFull, Start, Stored

GROUP = "workers"

_ENQUEUE = """
local depth = 0
for i = 3, #KEYS do depth = depth + redis.call('XLEN', KEYS[i]) end
local n = #ARGV - 5
if depth + n > tonumber(ARGV[1]) then return depth end
redis.call('HSET', KEYS[2], 'size', n, 'deadline', ARGV[3], 'at', ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[2])
for i = 1, n do
  redis.call('XADD', KEYS[1], '*', 'b', ARGV[5], 'i', i - 1, 'j', ARGV[5 + i])
end
return -1
"""

_FINISH = """
local new = redis.call('SADD', KEYS[2], ARGV[3])
if new == 1 then
  redis.call('XADD', KEYS[3], '*', 'i', ARGV[3], 'r', ARGV[4])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return new
"""


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisBroker:
    """The :class:`~assay.executor.queue.broker.Broker` on a Redis server.

    ``url``: ``redis://[:token@]host:port/db`` (``rediss://`` for TLS); the token is Redis's
    ``requirepass`` (or ``user:token`` for an ACL user). ``prefix`` separates fleets that
    share one Redis.
    """

    def __init__(self, url: str, *, prefix: str = "assay") -> None:
        try:
            import redis
        except ImportError:
            raise ConfigError(
                "the queue fleet needs redis-py: pip install 'assay[queue]'"
            ) from None
        # Any: redis-py's stubs type every reply as sync-or-async; the replies are read here.
        self._redis: Any = redis.Redis.from_url(url, health_check_interval=30)
        self._p = prefix
        try:
            for p in PRIORITIES:
                try:
                    self._redis.xgroup_create(self._stream(p), GROUP, id="0", mkstream=True)
                except redis.ResponseError as exc:
                    if "BUSYGROUP" not in str(exc):
                        raise
        except redis.RedisError as exc:
            where = url.rpartition("@")[2]  # never the token
            raise ConfigError(f"cannot use the Redis at {where}: {exc}") from None
        self._enqueue = self._redis.register_script(_ENQUEUE)
        self._finish = self._redis.register_script(_FINISH)

    def _stream(self, priority: str) -> str:
        return f"{self._p}:jobs:{priority}"

    def _key(self, kind: str, batch_id: str) -> str:
        return f"{self._p}:{kind}:{batch_id}"

    def enqueue(
        self,
        batch_id: str,
        priority: str,
        bodies: list[bytes],
        deadline_at: float | None,
        max_depth: int,
    ) -> None:
        import time

        keys = [self._stream(priority), self._key("batch", batch_id)]
        keys += [self._stream(p) for p in PRIORITIES]
        args: list[Any] = [max_depth, defaults.QUEUE_RESULT_TTL_S]
        args += ["" if deadline_at is None else repr(deadline_at), repr(time.time()), batch_id]
        depth = int(self._enqueue(keys=keys, args=args + bodies))
        if depth >= 0:
            raise QueueFull(depth, len(bodies), max_depth)

    def batch_size(self, batch_id: str) -> int | None:
        size = self._redis.hget(self._key("batch", batch_id), "size")
        return None if size is None else int(size)

    def cancel(self, batch_id: str) -> None:
        key = self._key("batch", batch_id)
        pipe = self._redis.pipeline()
        pipe.hset(key, "cancelled", "1")
        pipe.expire(key, defaults.QUEUE_RESULT_TTL_S)
        pipe.execute()

    @staticmethod
    def _deliveries(priority: str, entries: list[Any]) -> list[Delivery]:
        out = []
        for mid, f in entries:
            if f:  # an entry deleted after it was read has no fields
                out.append(Delivery(priority, _s(mid), _s(f[b"b"]), int(f[b"i"]), f[b"j"]))
        return out

    def read(self, consumer: str, count: int, block_s: float) -> list[Delivery]:
        out: list[Delivery] = []
        for p in PRIORITIES:  # the most urgent class first, each only for what is left
            got = self._redis.xreadgroup(GROUP, consumer, {self._stream(p): ">"}, count - len(out))
            for _, entries in got or []:
                out += self._deliveries(p, entries)
            if len(out) >= count:
                return out
        if out or block_s <= 0:
            return out
        streams = {self._stream(p): ">" for p in PRIORITIES}
        got = self._redis.xreadgroup(GROUP, consumer, streams, count, block=int(block_s * 1000))
        by_stream = {self._stream(p): p for p in PRIORITIES}
        for name, entries in got or []:
            out += self._deliveries(by_stream[_s(name)], entries)
        return out

    def claim(self, consumer: str, min_idle_s: float, count: int) -> list[Delivery]:
        out: list[Delivery] = []
        for p in PRIORITIES:
            if len(out) >= count:
                break
            reply = self._redis.xautoclaim(
                self._stream(p), GROUP, consumer, int(min_idle_s * 1000), "0-0", count - len(out)
            )
            out += self._deliveries(p, reply[1])
        return out

    def touch(self, consumer: str, deliveries: list[Delivery]) -> None:
        if not deliveries:
            return
        pipe = self._redis.pipeline(transaction=False)
        for p in PRIORITIES:
            ids = [d.message_id for d in deliveries if d.priority == p]
            if ids:
                pipe.xclaim(self._stream(p), GROUP, consumer, 0, ids, justid=True)
        pipe.execute()

    def start(self, deliveries: list[Delivery]) -> list[Start]:
        pipe = self._redis.pipeline(transaction=False)
        batches = sorted({d.batch_id for d in deliveries})
        for d in deliveries:
            pipe.hincrby(self._key("att", d.batch_id), str(d.index), 1)
            pipe.sismember(self._key("done", d.batch_id), str(d.index))
        for b in batches:
            pipe.expire(self._key("att", b), defaults.QUEUE_RESULT_TTL_S)
            pipe.hmget(self._key("batch", b), ["cancelled", "deadline", "at"])
        replies = pipe.execute()
        n = 2 * len(deliveries)
        meta = {b: replies[n + 2 * k + 1] for k, b in enumerate(batches)}
        out = []
        for k, d in enumerate(deliveries):
            cancelled, deadline, at = meta[d.batch_id]
            out.append(
                Start(
                    attempt=int(replies[2 * k]),
                    cancelled=cancelled is not None,
                    deadline_at=float(deadline) if deadline else None,
                    submitted_at=float(at) if at else 0.0,
                    done=bool(replies[2 * k + 1]),
                )
            )
        return out

    def finish(self, results: list[tuple[Delivery, bytes]]) -> list[bool]:
        pipe = self._redis.pipeline(transaction=False)
        for d, body in results:
            keys = [self._stream(d.priority), self._key("done", d.batch_id)]
            keys.append(self._key("out", d.batch_id))
            args: list[Any] = [GROUP, d.message_id, d.index, body, defaults.QUEUE_RESULT_TTL_S]
            self._finish(keys=keys, args=args, client=pipe)
        return [bool(r) for r in pipe.execute()]

    def results(self, cursors: dict[str, str], block_s: float) -> list[Stored]:
        if not cursors:
            return []
        streams = {self._key("out", b): c for b, c in cursors.items()}
        got = self._redis.xread(streams, count=4096, block=max(1, int(block_s * 1000)))
        out = []
        cut = len(self._p) + len(":out:")
        for name, entries in got or []:
            batch_id = _s(name)[cut:]
            for mid, f in entries:
                out.append(Stored(batch_id, _s(mid), int(f[b"i"]), f[b"r"]))
        return out

    def depth(self) -> dict[str, int]:
        pipe = self._redis.pipeline(transaction=False)
        for p in PRIORITIES:
            pipe.xlen(self._stream(p))
        return dict(zip(PRIORITIES, (int(n) for n in pipe.execute()), strict=True))

    def lag(self) -> dict[str, int]:
        pipe = self._redis.pipeline(transaction=False)
        for p in PRIORITIES:
            pipe.xinfo_groups(self._stream(p))
        out = {}
        for p, groups in zip(PRIORITIES, pipe.execute(), strict=True):
            g = next((g for g in groups if _s(g["name"]) == GROUP), None)
            lag = None if g is None else g.get("lag")
            out[p] = int(lag) if lag is not None else 0
        return out

    def close(self) -> None:
        self._redis.close()
