"""How a Python repository is laid out, read from the task's own files (never the agent's).

Verification runs the code under test as it would be after ``pip install -e .``: the
folders a package is imported from (the repository's root, ``src/``, or what
``package-dir`` names) are on ``sys.path``, and the project's metadata (name, version,
entry points) is found by ``importlib.metadata``. Everything here is computed from the
task's files, so an agent cannot add an import root or a module name by planting files.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from typing import Any

from .._pysource import parse_quietly

#: Where the generated metadata of the project sits, under the runner's folder.
SITE_DIR = "site"
_NAME_RE = re.compile(r"[^A-Za-z0-9.]+")


def _toml(files: Mapping[str, bytes], path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(files[path].decode())
    except (KeyError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _cfg(files: Mapping[str, bytes], path: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(files[path].decode())
    except (KeyError, UnicodeDecodeError, configparser.Error):
        return configparser.RawConfigParser()
    return parser


def _declared_root(files: Mapping[str, bytes]) -> str | None:
    """The folder ``package-dir`` maps the root package to (setuptools' ``{"" = "src"}``
    in pyproject.toml, ``package_dir = =src`` in setup.cfg, ``package_dir={"": "src"}``
    in setup.py)."""
    tool = _toml(files, "pyproject.toml").get("tool", {})
    mapped = tool.get("setuptools", {}).get("package-dir", {}) if isinstance(tool, dict) else {}
    if isinstance(mapped, dict) and isinstance(mapped.get(""), str):
        return str(mapped[""])
    cfg = _cfg(files, "setup.cfg")
    if cfg.has_option("options", "package_dir"):
        for line in cfg.get("options", "package_dir").splitlines():
            key, _, value = line.partition("=")
            if not key.strip() and value.strip():
                return value.strip()
    value = _setup_py(files).get("package_dir")
    if isinstance(value, dict) and isinstance(value.get(""), str):
        return str(value[""])
    return None


def import_roots(files: Mapping[str, bytes]) -> list[str]:
    """Workspace folders on ``sys.path`` (relative; ``""`` is the root): the root, and the
    folder packages are installed from when it is not the root (``src/`` by convention)."""
    roots = [""]
    declared = _declared_root(files)
    candidates = [os.path.normpath(declared)] if declared else []
    candidates.append("src")
    for root in candidates:
        if root in ("", ".") or root.startswith(".."):
            continue
        has_code = any(p.startswith(root + "/") and p.endswith(".py") for p in files)
        if has_code and f"{root}/__init__.py" not in files and root not in roots:
            roots.append(root)
    return roots


def own_modules(files: Mapping[str, bytes]) -> set[str]:
    """Every name the task's workspace could provide as a module: each folder and ``.py``
    stem on any path (a package's, a namespace package's, a test folder's helpers that
    pytest's rootdir insertion makes importable)."""
    names: set[str] = set()
    for path in files:
        if not path.endswith((".py", ".pyi")) and "/" not in path:
            continue
        parts = path.split("/")
        names.update(parts[:-1])
        if path.endswith((".py", ".pyi")):
            names.add(parts[-1].rsplit(".", 1)[0])
    return {n for n in names if n.isidentifier()}


def _setup_py(files: Mapping[str, bytes]) -> dict[str, Any]:
    """Literal keyword arguments of the ``setup(...)`` call in setup.py."""
    data = files.get("setup.py")
    if data is None:
        return {}
    try:
        tree = parse_quietly(data)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    for node in ast.walk(tree):
        name = getattr(node, "func", None)
        called = getattr(name, "id", None) or getattr(name, "attr", None)
        if isinstance(node, ast.Call) and called == "setup":
            out = {}
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                try:
                    out[kw.arg] = ast.literal_eval(kw.value)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    continue
            return out
    return {}


def _version_in_code(files: Mapping[str, bytes], roots: list[str], name: str) -> str | None:
    """``__version__ = "x"`` in the package's ``__init__.py`` or ``version.py``."""
    module = name.replace("-", "_").replace(".", "/").lower()
    for root in roots:
        base = f"{root}/{module}" if root else module
        for rel in (f"{base}/__init__.py", f"{base}/version.py", f"{base}/_version.py"):
            text = files.get(rel, b"").decode(errors="replace")
            if m := re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M):
                return m.group(1)
    return None


def project_metadata(files: Mapping[str, bytes], roots: list[str]) -> dict[str, bytes]:
    """A ``.dist-info`` of the project (paths under :data:`SITE_DIR`), as ``pip install -e
    .`` would leave: ``METADATA`` (name, version) and ``entry_points.txt``. Empty when the
    task has no packaging file naming the project."""
    project = _toml(files, "pyproject.toml").get("project", {})
    project = project if isinstance(project, dict) else {}
    cfg = _cfg(files, "setup.cfg")
    setup = _setup_py(files)
    name = project.get("name") or (
        cfg.get("metadata", "name") if cfg.has_option("metadata", "name") else setup.get("name")
    )
    if not isinstance(name, str) or not name.strip():
        return {}
    version = project.get("version") or (
        cfg.get("metadata", "version")
        if cfg.has_option("metadata", "version") and "attr:" not in cfg.get("metadata", "version")
        else setup.get("version")
    )
    if not isinstance(version, str) or not version.strip():
        version = _version_in_code(files, roots, name) or "0.0.0"
    groups: dict[str, dict[str, str]] = {}
    for key, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
        if isinstance(project.get(key), dict):
            groups[group] = {str(k): str(v) for k, v in project[key].items()}
    for group, entries in (project.get("entry-points") or {}).items():
        if isinstance(entries, dict):
            groups.setdefault(str(group), {}).update({str(k): str(v) for k, v in entries.items()})
    if cfg.has_section("options.entry_points"):
        for group, text in cfg.items("options.entry_points"):
            for line in text.splitlines():
                key, _, value = line.partition("=")
                if key.strip() and value.strip():
                    groups.setdefault(group, {})[key.strip()] = value.strip()
    # Plugins the project registers with pytest are not loaded by verification (autoload
    # is off); listing them would only mislead.
    groups.pop("pytest11", None)
    dist = f"{_NAME_RE.sub('_', name.strip())}-{_NAME_RE.sub('_', version.strip())}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name.strip()}\nVersion: {version.strip()}\n"
    out = {f"{SITE_DIR}/{dist}/METADATA": meta.encode()}
    if groups:
        text = "".join(
            f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(e.items())) + "\n"
            for g, e in sorted(groups.items())
        )
        out[f"{SITE_DIR}/{dist}/entry_points.txt"] = text.encode()
    return out


def has_pytest_config(files: Mapping[str, bytes]) -> bool:
    """Whether the task's root carries pytest configuration (then the run uses it, as the
    project's own ``pytest`` would; the file is the task's copy, the agent's is discarded)."""
    if "pytest.ini" in files:
        return True
    if (
        "tool" in _toml(files, "pyproject.toml")
        and "pytest" in _toml(files, "pyproject.toml")["tool"]
    ):
        return True
    if _cfg(files, "tox.ini").has_section("pytest"):
        return True
    return _cfg(files, "setup.cfg").has_section("tool:pytest")


_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def pytest_command(command: str) -> tuple[str, list[str]] | None:
    """``(folder, args)`` when ``command`` is one pytest invocation (``pytest ARGS``,
    ``py.test``, ``python[3] -m pytest ARGS``, after optional ``cd DIR &&`` and variable
    assignments), which verification runs in its own guarded pytest; ``None`` otherwise."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    folder = "."
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        folder, words = words[1], words[3:]
    while words and _ASSIGN.match(words[0]):
        words = words[1:]
    if any(w in ("&&", "||", ";", "|", "&", ">", "<", ">>", "2>&1") for w in words):
        return None
    if not words:
        return None
    program = os.path.basename(words[0])
    if program in ("pytest", "py.test"):
        return folder, words[1:]
    if re.fullmatch(r"python(3(\.\d+)?)?", program) and words[1:3] == ["-m", "pytest"]:
        return folder, words[3:]
    return None


def command_paths(command: str, files: Mapping[str, bytes]) -> set[str]:
    """Workspace files a ``test_command`` names (a script it runs): protected like tests."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    out = set()
    for word in words:
        norm = os.path.normpath(word.removeprefix("/work/"))
        if norm in files:
            out.add(norm)
    return out


__all__ = [
    "SITE_DIR",
    "command_paths",
    "has_pytest_config",
    "import_roots",
    "own_modules",
    "project_metadata",
    "pytest_command",
]
