"""Kattis / CLICS problem packages: ``data/sample`` and ``data/secret`` (``.in``/``.ans``
pairs), ``problem.yaml`` (limits, validator flags), ``output_validators/`` (a custom
validator, run with the Kattis conventions), ``submissions/accepted/`` (references).

The dataset path is one package or a folder of packages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LANGUAGES = {".py": "python", ".cpp": "cpp", ".cc": "cpp", ".c": "c"}


def _yaml(package: Path) -> dict[str, Any]:
    path = package / "problem.yaml"
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValidationError("problem.yaml", f"{package.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValidationError("problem.yaml", f"{package.name}: must be a mapping")
    return data


def _limits(package: Path, meta: dict[str, Any]) -> Limits:
    lim = meta.get("limits") or {}
    time_s = 2.0
    if (package / ".timelimit").exists():
        time_s = float((package / ".timelimit").read_text().split()[0])
    elif "time_limit" in lim:
        time_s = float(lim["time_limit"])
    memory = int(lim.get("memory", 1024))
    return Limits(time_s=time_s, memory_mb=memory)


def _comparison(flags: str) -> tuple[str, dict[str, Any]]:
    words = flags.split()
    opts: dict[str, Any] = {"case_insensitive": "case_sensitive" not in words}
    for i, w in enumerate(words[:-1]):
        if w == "float_tolerance":
            opts["abs_tol"] = opts["rel_tol"] = float(words[i + 1])
        elif w == "float_absolute_tolerance":
            opts["abs_tol"] = float(words[i + 1])
        elif w == "float_relative_tolerance":
            opts["rel_tol"] = float(words[i + 1])
    if "abs_tol" in opts or "rel_tol" in opts:
        opts.setdefault("abs_tol", 0.0)
        opts.setdefault("rel_tol", 0.0)
        return "floats", opts
    return "tokens", opts


def _validator(package: Path) -> tuple[str, str] | None:
    root = package / "output_validators"
    if not root.is_dir():
        return None
    for path in sorted(root.rglob("*")):
        if path.suffix in LANGUAGES and path.is_file():
            return path.read_text(), LANGUAGES[path.suffix]
    raise ValidationError(
        "output_validators", f"{package.name}: no validator source in a known language"
    )


def load_package(package: Path) -> Problem:
    meta = _yaml(package)
    compare, options = _comparison(str(meta.get("validator_flags", "")))
    tests = []
    for group in ("sample", "secret"):
        for inp in sorted((package / "data" / group).glob("*.in")):
            ans = inp.with_suffix(".ans")
            if not ans.exists():
                raise ValidationError("data", f"{package.name}: {inp.name} has no .ans file")
            tests.append(
                TestCase(
                    kind="stdio",
                    name=f"{group}/{inp.stem}",
                    input=inp.read_text(),
                    expected=ans.read_text(),
                    compare=compare,
                    options=options,
                )
            )
    validator = _validator(package) if meta.get("validation", "default") != "default" else None
    accepted = package / "submissions" / "accepted"
    refs = sorted(p.read_text() for p in accepted.glob("*.py")) if accepted.is_dir() else []
    return Problem(
        package.name,
        tests,
        limits=_limits(package, meta),
        checker=validator[0] if validator else None,
        references=refs,
        metadata={
            "prompt": str(meta.get("name", package.name)),
            **({"checker_style": "kattis", "checker_language": validator[1]} if validator else {}),
        },
    )


def load(path: str | Path) -> list[Problem]:
    root = Path(path)
    if not root.is_dir():
        raise ValidationError(
            "dataset", f"{root}: a Kattis package (or a folder of them) is a directory"
        )
    if (root / "data").is_dir():
        return [load_package(root)]
    packages = [p for p in sorted(root.iterdir()) if (p / "data").is_dir()]
    if not packages:
        raise ValidationError("dataset", f"{root}: no problem package (a folder with data/) found")
    return [load_package(p) for p in packages]
