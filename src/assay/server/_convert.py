"""Request fields to Assay values, each check raising ValidationError naming the field.

Everything a client sends passes through here before it can reach the executor: language
names (SandboxFusion's included), limits against the server's caps, code size, file paths
confined to the work dir, base64 payloads, and inline tests.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import posixpath
from dataclasses import replace
from typing import Any

from .. import languages
from .._extract import extract
from ..errors import UnsupportedLanguageError, ValidationError
from ..executor import RunJob
from ..judge import Problem, TestCase
from ..judge import compare as _compare
from ..types import Limits, Placement, check_isolation
from .models import LimitsModel, ProblemModel, RunBody, RunCodeRequest, TestModel
from .settings import Settings

#: Languages whose SandboxFusion response carries a ``compile_result``.
COMPILED = frozenset({"c", "cpp", "java", "go", "rust"})


def language(name: str, field: str = "language") -> str:
    """Assay's canonical name for ``name``: an Assay name or one of its aliases, which
    include SandboxFusion's spellings (``nodejs``, ``python3``, ``c++``, ``golang``)."""
    try:
        return languages.get(name).name
    except UnsupportedLanguageError:
        known = ", ".join(languages.names())
        aliases = ", ".join(sorted(languages.aliases()))
        raise ValidationError(
            field, f"unknown language {name!r}; known: {known} (aliases: {aliases})"
        ) from None


def code(text: str, settings: Settings, field: str = "code") -> str:
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > settings.max_code_bytes:
        raise ValidationError(
            field, f"{size} bytes, more than the cap of {settings.max_code_bytes}"
        )
    return text


def stdin(text: str | None, settings: Settings, field: str = "stdin") -> bytes:
    data = (text or "").encode("utf-8", errors="surrogatepass")
    if len(data) > settings.max_stdin_bytes:
        raise ValidationError(field, f"more than {settings.max_stdin_bytes} bytes")
    return data


def _number(value: float, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, "must be a finite number")
    if value < low or value > high:
        raise ValidationError(field, f"must be between {low} and {high}, got {value}")
    return value


def seconds(value: float, settings: Settings, field: str) -> float:
    return _number(value, field, 0.001, settings.max_time_s)


def memory_mb(value: int, settings: Settings, field: str) -> int:
    """MiB; SandboxFusion's ``-1`` (and 0) mean the server default."""
    if value in (-1, 0):
        return settings.default_memory_mb
    return int(_number(value, field, 16, settings.max_memory_mb))


def limits(model: LimitsModel | None, settings: Settings, base: Limits, field: str) -> Limits:
    """``base`` with the request's overrides, each checked against the server's caps (the
    rest of ``Limits``' own rules it checks itself)."""
    if model is None:
        return base
    bounds = {
        "time_s": (0.001, settings.max_time_s),
        "wall_s": (0.001, settings.max_time_s * 4),
        "memory_mb": (16, settings.max_memory_mb),
        "processes": (1, 1024),
        "output_bytes": (0, settings.max_output_bytes),
    }
    given = model.model_dump(exclude_none=True)
    for name, value in given.items():
        _number(value, f"{field}.{name}", *bounds[name])
    return replace(base, **given)


def path(p: str, field: str) -> str:
    """A relative path that stays inside the work dir (no absolute paths, no ``..``)."""
    if not isinstance(p, str) or not p or "\x00" in p or "\\" in p:
        raise ValidationError(field, f"invalid path {p!r}")
    if p.startswith("/"):
        raise ValidationError(field, f"absolute path {p!r}: paths are relative to the work dir")
    if ".." in p.split("/"):
        raise ValidationError(field, f"path {p!r} leaves the work dir ('..')")
    norm = posixpath.normpath(p)
    if norm in (".", "") or norm.startswith("../"):
        raise ValidationError(field, f"invalid path {p!r}")
    return norm


def files(
    items: dict[str, str | None], settings: Settings, field: str = "files"
) -> dict[str, bytes]:
    """Decoded ``{path: base64}`` (None: an empty file), paths and sizes checked."""
    if len(items) > settings.max_files:
        raise ValidationError(
            field, f"{len(items)} files, more than the cap of {settings.max_files}"
        )
    out: dict[str, bytes] = {}
    for name, b64 in items.items():
        where = f"{field}[{name!r}]"
        clean = path(name, where)
        try:
            data = b"" if b64 is None else base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError(where, "is not valid base64") from None
        if len(data) > settings.max_file_bytes:
            raise ValidationError(where, f"more than {settings.max_file_bytes} bytes decoded")
        out[clean] = data
    return out


def fetch(paths: list[str], settings: Settings, field: str = "fetch_files") -> list[str]:
    if len(paths) > settings.max_files:
        raise ValidationError(
            field, f"{len(paths)} paths, more than the cap of {settings.max_files}"
        )
    return [path(p, f"{field}[{i}]") for i, p in enumerate(paths)]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- inline problems ---------------------------------------------------------------------------


def _test(t: TestModel, field: str, settings: Settings) -> TestCase:
    if t.kind == "stdio":
        if t.expected is None:
            raise ValidationError(f"{field}.expected", "a stdio test needs an expected output")
        stdin(t.input, settings, f"{field}.input")
        return TestCase(
            kind="stdio", input=t.input, expected=t.expected, compare=t.compare, name=t.name
        )
    if t.kind == "script":
        if not t.code.strip():
            raise ValidationError(f"{field}.code", "a script test needs its test program")
        code(t.code, settings, f"{field}.code")
        options = _script_options(t.options, f"{field}.options")
        return TestCase(kind="script", name=t.name, code=t.code, options=options)
    if not t.fn_name or not t.fn_name.isidentifier():
        raise ValidationError(f"{field}.fn_name", "a call test needs a function name")
    return TestCase(
        kind="call",
        name=t.name,
        options={
            **_call_options(t.options, f"{field}.options"),
            "fn_name": t.fn_name,
            "args": list(t.args),
        },
        expected_value=t.expected_value,
    )


def _call_options(options: dict[str, Any], field: str) -> dict[str, Any]:
    """The comparison options a call test may carry (those the trainer integrations send)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key in ("atol", "rtol"):
            _number(value, f"{field}.{key}", 0, 1e9)
            out[key] = float(value)
        elif key == "tuples_as_lists":
            if not isinstance(value, bool):
                raise ValidationError(f"{field}.{key}", "must be true or false")
            out[key] = value
        elif key == "also":
            if not isinstance(value, list):
                raise ValidationError(f"{field}.{key}", "must be a list of accepted values")
            out[key] = value
        else:
            raise ValidationError(
                f"{field}.{key}", "unknown option; known: also, tuples_as_lists, atol, rtol"
            )
    return out


def _script_options(options: dict[str, Any], field: str) -> dict[str, Any]:
    """What a script test may carry besides its program (as the dataset formats set it)."""
    for key, value in options.items():
        if key in ("setup", "call"):
            if not isinstance(value, str):
                raise ValidationError(f"{field}.{key}", "must be a string of code")
        elif key == "requires":
            if not isinstance(value, list) or not all(
                isinstance(n, str) and n.isidentifier() for n in value
            ):
                raise ValidationError(f"{field}.{key}", "must be a list of names")
        else:
            raise ValidationError(f"{field}.{key}", "unknown option; known: setup, call, requires")
    return dict(options)


def problem(model: ProblemModel, settings: Settings, base: Limits, field: str) -> Problem:
    if not model.tests:
        raise ValidationError(f"{field}.tests", "at least one test is needed")
    if len(model.tests) > settings.max_tests:
        raise ValidationError(f"{field}.tests", f"more than {settings.max_tests} tests")
    tests = [_test(t, f"{field}.tests[{i}]", settings) for i, t in enumerate(model.tests)]
    for i, t in enumerate(tests):
        if t.kind == "stdio" and t.compare not in _compare.REGISTRY:
            known = ", ".join(sorted(_compare.REGISTRY))
            raise ValidationError(
                f"{field}.tests[{i}].compare", f"unknown comparator {t.compare!r}; known: {known}"
            )
    where = placement(model.image, model.isolation, f"{field}.")
    return Problem(
        model.id,
        tests,
        limits=limits(model.limits, settings, base, f"{field}.limits"),
        image=where.image,
        network=model.network,
        isolation=where.isolation,
    )


def label_problem(label: Any, field: str, limits_: Limits) -> Problem:
    """An OpenRLHF/APPS-style label: ``{"inputs", "outputs"}`` (stdio) or with ``fn_name``
    (call tests), as an object or a JSON string."""
    from ..formats import apps

    if isinstance(label, str):
        try:
            label = json.loads(label)
        except json.JSONDecodeError as exc:
            raise ValidationError(field, f"not valid JSON: {exc.msg}") from None
        except RecursionError:  # the client's input, not a fault of the service
            raise ValidationError(field, "not valid JSON: nested too deeply") from None
    if not isinstance(label, dict):
        raise ValidationError(field, "must be an object with 'inputs' and 'outputs'")
    try:
        p = apps.problem({"input_output": label, "id": str(label.get("id", "label"))})
    except ValidationError as exc:
        raise ValidationError(field, exc.message) from None
    return Problem(p.id, p.tests, limits=limits_)


# -- code extraction -----------------------------------------------------------------------------


def extract_code(text: str, lang: str) -> tuple[str, str]:
    """The program in a model's answer and how it was found (SandboxFusion's
    ``extracted_type``), by the rule every entry point shares (:mod:`assay._extract`)."""
    got = extract(text, lang)
    return got.code, got.kind


def run_job(body: RunBody | RunCodeRequest, limits: Limits, settings: Settings) -> RunJob:
    """The plain run a run request asks for (``/v1/run``, ``/run_code``): its program,
    input, files and placement checked here (``ValidationError`` names the field), its
    ``limits`` already (each route has its own way of asking for them)."""
    lang = language(body.language)
    src = code(body.code, settings)
    data = stdin(body.stdin, settings)
    given = files(dict(body.files), settings)
    wanted = fetch(body.fetch_files, settings)
    where = placement(body.image, body.isolation)
    return RunJob(
        src,
        lang,
        data,
        limits,
        tuple(given.items()),
        tuple(wanted),
        image=where.image,
        isolation=where.isolation,
    )


def placement(image: str | None, isolation: str | None, prefix: str = "") -> Placement:
    """Where a job of a request runs, checked once here (a 422 naming ``{prefix}image`` or
    ``{prefix}isolation``): the stored image's full id (so a job names exactly one image
    even if a name is later reused) and the tier. Every job kind (runs, judged problems,
    sessions) takes its placement from here."""
    tier = check_isolation(isolation, f"{prefix}isolation") if isolation is not None else None
    if image is None:
        return Placement(None, tier)
    from ..images import ImageStore

    try:
        return Placement(ImageStore().get(image).id, tier)
    except ValidationError as exc:
        raise ValidationError(f"{prefix}image", exc.message) from None
