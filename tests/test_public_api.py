"""The public surface: what the README and the docs tell users to import is exported
(``__all__``), and every ``__all__`` names something real. httpx keeps such a test; so do we."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import assay
from assay import reward as rewards

ROOT = Path(__file__).resolve().parents[1]
#: The README and every page of the documentation site.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: Modules with a public surface of their own.
PUBLIC_MODULES = [
    "assay",
    "assay.errors",
    "assay.executor",
    "assay.formats",
    "assay.integrations",
    "assay.integrations.trl",
    "assay.integrations.verl",
    "assay.judge",
    "assay.reward",
    "assay.scheduler",
    "assay.sessions",
    "assay.server",
    "assay.telemetry",
]


def _code_blocks(text: str) -> list[str]:
    # A fence closes on a line of its own (an example may hold ``` inside a string).
    return re.findall(r"^```python\n(.*?)^```[ \t]*$", text, flags=re.DOTALL | re.MULTILINE)


def _readme_imports() -> list[tuple[str, str]]:
    """``(module, name)`` for every ``from assay... import name`` in the docs' Python
    blocks and every ``assay.<module>.<Name>`` they mention anywhere."""
    text = "\n".join(path.read_text() for path in DOCS)
    out: list[tuple[str, str]] = []
    for block in _code_blocks(text):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("assay"):
                out += [(node.module or "", a.name) for a in node.names]
    for dotted in set(re.findall(r"\bassay(?:\.[A-Za-z_]\w*)+", text)):
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            try:
                importlib.import_module(module)
            except ImportError:
                continue
            name = parts[cut]
            if name.startswith("__"):  # ``assay.__all__``, ``assay.__version__``: not imports
                break
            try:
                submodule = importlib.util.find_spec(f"{module}.{name}") is not None
            except (ImportError, AttributeError):  # ``module`` is a module, not a package
                submodule = False
            if not submodule:
                out.append((module, name))
            break
    return sorted(set(out))


def test_the_readme_mentions_imports_at_all() -> None:
    found = _readme_imports()
    assert ("assay.integrations.verl", "compute_score") in found
    assert ("assay", "LocalExecutor") in found


@pytest.mark.parametrize("module,name", _readme_imports())
def test_what_the_readme_imports_is_exported(module: str, name: str) -> None:
    mod = importlib.import_module(module)
    assert name in getattr(mod, "__all__", ()), f"{module}.{name} is not in {module}.__all__"


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_exported_name_exists(module: str) -> None:
    mod: ModuleType = importlib.import_module(module)
    exported = getattr(mod, "__all__", None)
    assert exported, f"{module} has no __all__"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert missing == []
    assert len(set(exported)) == len(exported)


def test_top_level_exports() -> None:
    for name in [
        "RewardFn",
        "RewardResult",
        "Reward",
        "BinaryReward",
        "FractionReward",
        "WeightedFractionReward",
        "EfficiencyReward",
        "MemoryReward",
        "QualityReward",
        "CompositeReward",
        "ClosedError",
        "get_reward",
    ]:
        assert name in assay.__all__ and hasattr(assay, name)
    assert assay.__all__ == sorted(assay.__all__)
    assert assay.get_reward is rewards.get


def test_integrations_surface() -> None:
    from assay import integrations
    from assay.integrations import trl, verl

    assert {"RewardConfig", "extract_code", "parse_ground_truth"} <= set(integrations.__all__)
    assert {"compute_score", "compute_score_batch", "KEYS"} <= set(verl.__all__)
    assert {"make_reward_func", "reward_func"} <= set(trl.__all__)


def test_wide_signatures_take_keywords_only() -> None:
    """A call with a dozen positional arguments is a call nobody can read or safely
    extend: past the first few, parameters are keyword-only."""
    import dataclasses
    import inspect

    from assay.evaluate import evaluate
    from assay.executor import JobResult
    from assay.integrations import RewardConfig

    params = list(inspect.signature(evaluate).parameters.values())
    assert [p.name for p in params[:4]] == ["dataset", "fmt", "samples_path", "out_path"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[4:])
    for cls in (JobResult, RewardConfig):
        assert all(f.kw_only for f in dataclasses.fields(cls)), cls
