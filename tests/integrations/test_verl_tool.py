"""The veRL tool against veRL's own ``BaseTool`` and schemas (``pip install --no-deps verl``).

veRL's package ``__init__`` imports ray and torch; the interface modules do not, apart from
the tracing decorator (``verl.utils.rollout_trace``, which pulls ray). The test loads
``verl/tools/base_tool.py`` and ``schemas.py`` from the installed wheel as they are, with
only that decorator replaced by the identity.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import Runner

from ._agent_task import TASK

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "verl_agent_tool.yaml"


@pytest.fixture
def verl_tool(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        pytest.skip("veRL is not installed (make install does: pip install --no-deps verl)")
    root = Path(spec.origin).parent
    for name, path in (
        ("verl", root),
        ("verl.utils", root / "utils"),
        ("verl.tools", root / "tools"),
    ):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        monkeypatch.setitem(sys.modules, name, module)
    trace = types.ModuleType("verl.utils.rollout_trace")
    trace.rollout_trace_op = lambda fn: fn  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verl.utils.rollout_trace", trace)
    for name in ("verl.tools.base_tool", "verl.tools.schemas"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    base = importlib.import_module("verl.tools.base_tool")
    from assay.integrations import verl_tool

    module = importlib.reload(verl_tool)
    assert issubclass(module.AssayAgentTool, base.BaseTool)
    yield module
    importlib.reload(verl_tool)


def test_create_execute_calc_reward_release(verl_tool: Any, runner: Runner) -> None:
    import yaml
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

    config = yaml.safe_load(EXAMPLE.read_text())["tools"][0]
    assert config["class_name"] == "assay.integrations.verl_tool.AssayAgentTool"
    schema = OpenAIFunctionToolSchema.model_validate(config["tool_schema"])
    tool = verl_tool.AssayAgentTool({**config["config"], "source": runner}, schema)
    assert tool.name == "assay_workspace"

    async def episode() -> None:
        iid, first = await tool.create(create_kwargs={"task": TASK})
        assert isinstance(first, ToolResponse) and "fix it" in first.text
        resp, reward, metrics = await tool.execute(iid, {"command": "cat calc.py"})
        assert "a - b" in resp.text and reward == 0.0
        resp, reward, metrics = await tool.execute(
            iid,
            {
                "command": "sed -i 's/a - b/a + b/' calc.py",
                "verify": True,
                "diagnosis": '{"lines": ["calc.py:2"]}',
            },
        )
        assert reward == pytest.approx(0.7) and metrics["valid"] and "2/2" in resp.text
        assert await tool.calc_reward(iid) == 1.0
        assert tool.final_rewards(iid)["step_rewards"] == [pytest.approx(0.7), 0.0]
        await tool.release(iid)
        with pytest.raises(KeyError):
            await tool.execute(iid, {"command": "true"})

    asyncio.run(episode())


def test_episode_id_keeps_the_session_across_per_call_instances(
    verl_tool: Any, runner: Runner
) -> None:
    tool = verl_tool.AssayAgentTool({"type": "native", "source": runner})

    async def calls() -> None:
        kwargs = {"task": TASK, "episode_id": "traj-1"}
        iid, _ = await tool.create(create_kwargs=kwargs)
        await tool.execute(iid, {"command": "echo hi > note.txt"})
        await tool.release(iid)  # veRL's agent loop releases after every call
        iid2, _ = await tool.create(create_kwargs=kwargs)
        resp, _, _ = await tool.execute(iid2, {"command": "cat note.txt"})
        assert iid2 == iid == "traj-1" and "hi" in resp.text
        await tool.close_episode(iid)

    asyncio.run(calls())
