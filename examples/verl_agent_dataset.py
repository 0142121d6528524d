"""A veRL multi-turn dataset of Assay agent tasks, and the tool run on it against a live
``assay serve``, as veRL's rollout workers would on GPU nodes (no sandbox of their own).

Each row is what veRL's RL dataset reads: ``prompt`` (chat messages), ``data_source``,
``reward_model`` and ``extra_info.tools_kwargs``, whose ``assay_workspace.create_kwargs``
the tool's ``create`` receives (the task as JSON text, so rows with different file names
share one Parquet schema). The second half plays the model's part with a scripted fix and
runs the tool's whole lifecycle on every row against the server at ``--url``.

Run:
    assay serve --port 8080 &
    .venv/bin/python examples/verl_agent_dataset.py --url http://127.0.0.1:8080
Then train with data.train_files=<--out> and
actor_rollout_ref.rollout.multi_turn.tool_config_path=examples/verl_agent_tool.yaml (with
``url`` set in its config).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from assay.integrations.verl_tool import AssayAgentTool

CONFIG = yaml.safe_load((Path(__file__).parent / "verl_agent_tool.yaml").read_text())["tools"][0]
TASKS = [
    {
        "task_id": "calc-add",
        "instructions": "add() in calc.py is wrong; fix it.",
        "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
        "tests": {
            "test_add.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        },
        "metadata": {"fix": "sed -i 's/a - b/a + b/' calc.py"},
    },
    {
        "task_id": "text-shout",
        "instructions": "shout() in text.py must upper-case its argument.",
        "files": {"text.py": "def shout(s):\n    return s.lower()\n"},
        "tests": {
            "test_text.py": "from text import shout\n\ndef test_shout():\n"
            "    assert shout('hi') == 'HI'\n"
        },
        "metadata": {"fix": "sed -i 's/lower/upper/' text.py"},
    },
]


def row(index: int, task: dict[str, Any]) -> dict[str, Any]:
    """One dataset row for veRL's multi-turn rollout."""
    return {
        "data_source": "assay_agent",
        "prompt": [
            {"role": "system", "content": "Fix the code with the assay_workspace tool."},
            {"role": "user", "content": task["instructions"]},
        ],
        "ability": "agent",
        "reward_model": {"style": "rule", "ground_truth": task["task_id"]},
        "extra_info": {
            "index": index,
            "need_tools_kwargs": True,
            "tools_kwargs": {
                "assay_workspace": {
                    "create_kwargs": {"task": json.dumps(task), "episode_id": f"row-{index}"}
                }
            },
        },
    }


async def rollout(tool: AssayAgentTool, data: dict[str, Any]) -> float:
    """One trajectory with a scripted 'model': look, verify, fix, verify, final reward."""
    kwargs = data["extra_info"]["tools_kwargs"]["assay_workspace"]["create_kwargs"]
    fix = json.loads(kwargs["task"])["metadata"]["fix"]
    iid, _prompt = await tool.create(create_kwargs=dict(kwargs, close_on_release=True))
    for params in ({"command": "ls", "verify": True}, {"command": fix, "verify": True}):
        _resp, reward, metrics = await tool.execute(iid, params)
        print(f"  {iid}: step reward {reward:+.2f} (valid {metrics['valid']})")
    final = await tool.calc_reward(iid)
    await tool.release(iid)
    return final


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default=os.environ.get("ASSAY_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--out", default="assay_agent_dataset.parquet", help="Parquet file")
    args = ap.parse_args()
    pq.write_table(pa.Table.from_pylist([row(i, t) for i, t in enumerate(TASKS)]), args.out)
    rows = pq.read_table(args.out).to_pylist()  # what veRL's dataset hands the rollout
    print(f"wrote {len(rows)} rows to {args.out}")
    tool = AssayAgentTool({**CONFIG["config"], "url": args.url}, None)
    for data in rows:
        print(f"row {data['extra_info']['index']}: final reward {await rollout(tool, data)}")


if __name__ == "__main__":
    asyncio.run(main())
