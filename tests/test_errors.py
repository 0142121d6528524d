"""Every error Assay raises on purpose at a public entry point is an AssayError, naming the
bad field where there is one (errors.py's promise)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from assay import AssayError, ClosedError, ValidationError, errors
from assay.languages.cache import CompileCache
from assay.scheduler import FairQueue, ResultCache, Task
from assay.telemetry import MemoryWriter, query
from assay.telemetry._jsonl import JsonlWriter
from assay.telemetry._store import resolve


def _closed_queue() -> None:
    q = FairQueue(4)
    q.close()
    q.put_many([Task(None, "c", 1, 0.1, 0)])


def _closed_writer() -> None:
    w = MemoryWriter()
    w.close()
    w.write({"job_id": "x"})


def _serve_bad_slots() -> None:
    from assay.server.serving import serve

    serve(slots=0)


CASES: list[tuple[str, Callable[[], object], str | None]] = [
    ("queue capacity", lambda: FairQueue(0), "capacity"),
    ("queue order", lambda: FairQueue(4, "newest"), "order"),  # type: ignore[arg-type]
    ("closed queue", _closed_queue, None),
    ("cache size", lambda: ResultCache(-1), "max_entries"),
    ("closed writer", _closed_writer, None),
    ("empty records target", lambda: resolve(" "), "target"),
    ("query limit", lambda: query("off", limit=-1), "limit"),
    ("server slots", _serve_bad_slots, "slots"),
]


@pytest.mark.parametrize("what,call,field", CASES, ids=[c[0] for c in CASES])
def test_entry_points_raise_assay_errors(
    what: str, call: Callable[[], object], field: str | None
) -> None:
    with pytest.raises(AssayError) as caught:
        call()
    if field is not None:
        assert isinstance(caught.value, ValidationError) and caught.value.field == field


def test_writer_and_cache_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as bad:
        JsonlWriter(tmp_path, rotate_bytes=0)
    assert bad.value.field == "rotate_bytes"
    writer = JsonlWriter(tmp_path)
    writer.close()
    with pytest.raises(ClosedError):
        writer.write({"job_id": "x"})
    with pytest.raises(ValidationError) as key:
        CompileCache(tmp_path / "cc").get("NOT-HEX")
    assert key.value.field == "key"


def test_closed_is_still_a_value_error_as_for_a_closed_file() -> None:
    assert issubclass(ClosedError, ValueError) and issubclass(ClosedError, AssayError)


def _public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class that a public name of an ``assay`` package or module exports
    (``__all__``), by qualified name."""
    import importlib
    import pkgutil

    import assay

    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(assay.__path__, "assay."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf.startswith("_") or "._" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (ray, otel, ...) not installed
            continue
        for name in getattr(module, "__all__", []):
            value = getattr(module, name, None)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[f"{info.name}.{name}"] = value
    return found


def test_every_public_exception_is_an_assay_error_drawn_in_errors() -> None:
    import assay.errors

    found = _public_exceptions()
    assert "assay.sessions.UnknownSession" in found  # the walk sees the packages' faces
    outside = {
        name: cls.__module__
        for name, cls in found.items()
        if not issubclass(cls, AssayError) or cls.__module__ != "assay.errors"
    }
    assert outside == {}
    drawn = assay.errors.__doc__ or ""
    assert [c.__name__ for c in set(found.values()) if c.__name__ not in drawn] == []


@pytest.mark.parametrize("error", [
    errors.ValidationError("limits.cpu_s", "at most 3600"),
    errors.SessionEnded("sid", "node_lost", "node n1 died"),
    errors.TooManySessions("sessions", 3, 3, retry_after=2.0),
    errors.DownloadTooLarge("a.bin", 10, 5),
    errors.UnsupportedLanguageError("cobol", ["python"]),
    errors.InsecureHostError(["seccomp"]),
    errors.SessionFault("pids_limit", "no process left"),
    errors.UnknownSession("sid"),
    errors.SessionRefused("no such file"),
])  # fmt: skip
def test_an_error_crosses_processes_whole(error: AssayError) -> None:
    """A node agent's error reaches the Ray driver pickled: same class, message and fields
    (most constructors take several arguments, which plain exception pickling loses: it
    calls the class again with the message alone)."""
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert (str(again), again.args, again.__dict__) == (str(error), error.args, error.__dict__)
