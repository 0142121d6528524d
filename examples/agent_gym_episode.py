"""A gymnasium-style agent episode on an Assay task: reset, text actions, step rewards.

Run: .venv/bin/python examples/agent_gym_episode.py
"""

from assay.integrations.gym import TaskEnv

TASK = {
    "task_id": "calc",
    "instructions": "add() in calc.py is wrong; fix it.",
    "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
    "tests": {
        "test_hidden.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    },
    "reference_patch": "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n",
}
ACTIONS = [
    "```bash\ncat calc.py\n```",
    "<verify>",
    "```bash\nsed -i 's/a - b/a + b/' calc.py\n```",
    '<verify>{"lines": ["calc.py:2"]}</verify>',
    "<submit>",
]

env = TaskEnv([TASK], gated=True)
obs, info = env.reset(seed=0)
print("task:", info["task_id"])
for action in ACTIONS:
    obs, reward, terminated, truncated, info = env.step(action)
    print(f"{' '.join(action.split())[:40]:42} reward {reward:+.2f}  {obs.splitlines()[0][:50]}")
assert env.episode is not None
print("episode:", env.episode.rewards().to_dict())
env.close()
