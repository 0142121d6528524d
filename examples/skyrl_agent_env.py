"""A SkyRL-gym environment on an Assay task (needs skyrl-gym: pip install 'assay[agents]').

Run: .venv/bin/python examples/skyrl_agent_env.py
"""

import skyrl_gym
from skyrl_gym.envs import register

register(id="assay_task", entry_point="assay.integrations.skyrl:AssayTaskEnv")

TASK = {
    "task_id": "calc",
    "instructions": "add() in calc.py is wrong; fix it.",
    "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
    "tests": {
        "test_hidden.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    },
}
env = skyrl_gym.make("assay_task", env_config={"max_turns": 10}, extras={"task": TASK})
prompt, _ = env.init([{"role": "system", "content": "You fix Python code."}])
print(prompt[-1]["content"].splitlines()[0])
for action in ["```bash\nsed -i 's/a - b/a + b/' calc.py\n```", "<verify>", "<submit>"]:
    out = env.step(action)
    print(f"reward {out['reward']:+.2f} done {out['done']}")
print("metrics:", env.get_metrics())
env.close()
