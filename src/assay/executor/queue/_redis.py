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
from .broker import PRIORITIES, Delivery, NewBatch, QueueFull, Start, Stored, Taken

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


# Reads (mode "read") or claims (mode "claim", idle past ARGV[7] ms) up to ARGV[3] jobs, the
# most urgent stream first, and counts an attempt of each, in one round trip: a worker that
# dies after this leaves every job it took pending with its attempt counted.
_TAKE = """
local group, consumer, want = ARGV[1], ARGV[2], tonumber(ARGV[3])
local prefix, ttl, mode = ARGV[4], ARGV[5], ARGV[6]
local out = {}
for k = 1, #KEYS do
  if want <= 0 then break end
  local entries = {}
  if mode == 'claim' then
    entries = redis.call('XAUTOCLAIM', KEYS[k], group, consumer, ARGV[7], '0-0', 'COUNT', want)[2]
  else
    local got = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want, 'STREAMS', KEYS[k], '>')
    if got then entries = got[1][2] end
  end
  for _, e in ipairs(entries) do
    if e[2] then
      local f = {}
      for i = 1, #e[2], 2 do f[e[2][i]] = e[2][i + 1] end
      local b, idx = f['b'], f['i']
      local att = redis.call('HINCRBY', prefix .. ':att:' .. b, idx, 1)
      redis.call('EXPIRE', prefix .. ':att:' .. b, ttl)
      local done = redis.call('SISMEMBER', prefix .. ':done:' .. b, idx)
      local m = redis.call('HMGET', prefix .. ':batch:' .. b, 'cancelled', 'deadline', 'at')
      out[#out + 1] = {k, e[1], b, idx, f['j'], att, done, m[1] or '', m[2] or '', m[3] or ''}
      want = want - 1
    end
  end
end
return out
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
        self._noscript = redis.exceptions.NoScriptError
        self._sha: dict[str, str] = {}
        self._load_scripts()

    def _load_scripts(self) -> None:
        """Load the Lua scripts (again after a Redis restart forgot them): calls send only
        their SHA, and a pipeline of them needs no SCRIPT EXISTS round trip first."""
        for name, source in (("enqueue", _ENQUEUE), ("finish", _FINISH), ("take", _TAKE)):
            self._sha[name] = self._redis.script_load(source)

    def _eval(self, name: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return self._redis.evalsha(self._sha[name], len(keys), *keys, *args)
        except self._noscript:
            self._load_scripts()
            return self._redis.evalsha(self._sha[name], len(keys), *keys, *args)

    def _stream(self, priority: str) -> str:
        return f"{self._p}:jobs:{priority}"

    def _key(self, kind: str, batch_id: str) -> str:
        return f"{self._p}:{kind}:{batch_id}"

    def enqueue(self, batch: NewBatch, max_depth: int) -> None:
        import time

        keys = [self._stream(batch.priority), self._key("batch", batch.id)]
        keys += [self._stream(p) for p in PRIORITIES]
        deadline = "" if batch.deadline_at is None else repr(batch.deadline_at)
        args: list[Any] = [max_depth, defaults.QUEUE_RESULT_TTL_S]
        args += [deadline, repr(time.time()), batch.id]
        depth = int(self._eval("enqueue", keys, args + batch.bodies))
        if depth >= 0:
            raise QueueFull(depth, len(batch.bodies), max_depth)

    def batch_size(self, batch_id: str) -> int | None:
        size = self._redis.hget(self._key("batch", batch_id), "size")
        return None if size is None else int(size)

    def cancel(self, batch_id: str) -> None:
        key = self._key("batch", batch_id)
        pipe = self._redis.pipeline()
        pipe.hset(key, "cancelled", "1")
        pipe.expire(key, defaults.QUEUE_RESULT_TTL_S)
        pipe.execute()

    def _take(self, consumer: str, count: int, mode: str, min_idle_ms: int = 0) -> list[Taken]:
        keys = [self._stream(p) for p in PRIORITIES]
        args = [GROUP, consumer, count, self._p, defaults.QUEUE_RESULT_TTL_S, mode, min_idle_ms]
        out = []
        for k, mid, b, idx, body, att, done, cancelled, deadline, at in self._eval(
            "take", keys, args
        ):
            d = Delivery(PRIORITIES[int(k) - 1], _s(mid), _s(b), int(idx), body)
            out.append((d, _start(int(att), int(done), cancelled, deadline, at)))
        return out

    def read(self, consumer: str, count: int, block_s: float) -> list[Taken]:
        taken = self._take(consumer, count, "read")
        if taken or block_s <= 0:
            return taken
        # Nothing queued: wait on every class at once (a script cannot block), then count
        # the attempts of what came.
        streams = {self._stream(p): ">" for p in PRIORITIES}
        got = self._redis.xreadgroup(GROUP, consumer, streams, count, block=int(block_s * 1000))
        by_stream = {self._stream(p): p for p in PRIORITIES}
        deliveries = []
        for name, entries in got or []:
            for mid, f in entries:
                if f:
                    p = by_stream[_s(name)]
                    deliveries.append(Delivery(p, _s(mid), _s(f[b"b"]), int(f[b"i"]), f[b"j"]))
        return self._start(deliveries) if deliveries else []

    def claim(self, consumer: str, min_idle_s: float, count: int) -> list[Taken]:
        return self._take(consumer, count, "claim", int(min_idle_s * 1000))

    def touch(self, consumer: str, deliveries: list[Delivery]) -> None:
        if not deliveries:
            return
        pipe = self._redis.pipeline(transaction=False)
        for p in PRIORITIES:
            ids = [d.message_id for d in deliveries if d.priority == p]
            if ids:
                pipe.xclaim(self._stream(p), GROUP, consumer, 0, ids, justid=True)
        pipe.execute()

    def _start(self, deliveries: list[Delivery]) -> list[Taken]:
        pipe = self._redis.pipeline(transaction=False)
        for d in deliveries:
            pipe.hincrby(self._key("att", d.batch_id), str(d.index), 1)
            pipe.expire(self._key("att", d.batch_id), defaults.QUEUE_RESULT_TTL_S)
            pipe.sismember(self._key("done", d.batch_id), str(d.index))
            pipe.hmget(self._key("batch", d.batch_id), ["cancelled", "deadline", "at"])
        replies = pipe.execute()
        out = []
        for k, d in enumerate(deliveries):
            att, _, done, (cancelled, deadline, at) = replies[4 * k : 4 * k + 4]
            out.append(
                (d, _start(int(att), int(done), cancelled or b"", deadline or b"", at or b""))
            )
        return out

    def finish(self, results: list[tuple[Delivery, bytes]]) -> list[bool]:
        pipe = self._redis.pipeline(transaction=False)
        for d, body in results:
            keys = [self._stream(d.priority), self._key("done", d.batch_id)]
            keys.append(self._key("out", d.batch_id))
            args: list[Any] = [GROUP, d.message_id, d.index, body, defaults.QUEUE_RESULT_TTL_S]
            pipe.evalsha(self._sha["finish"], len(keys), *keys, *args)
        try:
            replies = pipe.execute()
        except self._noscript:  # Redis restarted: nothing of this pipeline ran
            self._load_scripts()
            return self.finish(results)
        return [bool(r) for r in replies]

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


def _start(att: int, done: int, cancelled: bytes, deadline: bytes, at: bytes) -> Start:
    """A :class:`Start` from the batch hash's fields (empty when absent)."""
    return Start(
        attempt=att,
        cancelled=bool(cancelled),
        deadline_at=float(deadline) if deadline else None,
        submitted_at=float(at) if at else 0.0,
        done=bool(done),
    )
