"""veRL's multi-turn tool lifecycle on an Assay task, as veRL's rollout drives it.

The tool is declared in examples/verl_agent_tool.yaml; here the same calls veRL makes
(create -> execute ... -> calc_reward -> release) run directly, so this needs no GPU (with
veRL installed the class is a real ``verl.tools.base_tool.BaseTool``).

Run: .venv/bin/python examples/verl_agent_tool.py
"""

import asyncio
from pathlib import Path

import yaml

from assay.integrations.verl_tool import AssayAgentTool

CONFIG = yaml.safe_load((Path(__file__).parent / "verl_agent_tool.yaml").read_text())["tools"][0]
TASK = {
    "task_id": "calc",
    "instructions": "add() in calc.py is wrong; fix it.",
    "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
    "tests": {
        "test_hidden.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    },
}


async def main() -> None:
    tool = AssayAgentTool(CONFIG["config"], None)
    iid, first = await tool.create(create_kwargs={"task": TASK})
    print("prompt:", first.text.splitlines()[0])
    for params in (
        {"command": "cat calc.py", "verify": True},
        {"command": "sed -i 's/a - b/a + b/' calc.py", "verify": True},
    ):
        resp, reward, _metrics = await tool.execute(iid, params)
        print(f"step reward {reward:+.2f}: {resp.text.splitlines()[-1]}")
    print("final reward:", await tool.calc_reward(iid))
    print("rewards:", tool.final_rewards(iid))
    await tool.release(iid)


asyncio.run(main())
