"""Assay through veRL's own reward loop, configured word for word as the trainers guide (docs/guides/trainers.md) shows.

The guide's ``## veRL`` blocks are parsed; their overrides are composed into veRL's own
``ppo_trainer`` config with Hydra (as ``python -m verl.trainer.main_ppo`` does), and veRL's
``RewardLoopWorker`` (the trainer's reward path in veRL 0.9) loads the function as veRL
loads it (``get_custom_reward_fn`` / ``load_extern_object``: by ``pkg://`` and by file path)
and scores a real ``DataProto`` through its ``NaiveRewardManager``. The legacy batch path is
tested through veRL's ``BatchRewardManager`` class. Needs the ``trainers`` extra.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install 'assay[trainers]')")
pytest.importorskip("hydra", reason="hydra-core is not installed (pip install 'assay[trainers]')")
pytest.importorskip(
    "verl.experimental.reward_loop", reason="veRL's reward loop does not import (make install)"
)

from ._tiny import FENCE, tiny_tokenizer, verl_batch

pytestmark = pytest.mark.slow

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "trainers.md"

#: One row per way a reward goes: the prompt opens the fence and the completion closes it
#: (MBPP asserts, a float answer to an int assert), a wrong stdio answer, an empty completion.
ROWS: list[dict[str, Any]] = [
    {
        "data_source": "mbpp",
        "prompt": f"Write area.\n{FENCE}python\n",
        "response": f"def area(a, b):\n    return a * b / 1.0\n{FENCE}\n",
        "ground_truth": ["assert area(10, 24) == 240", "assert area(1, 1) == 1"],
    },
    {
        "data_source": "apps",
        "prompt": "Read a number and print its double.\n",
        "response": f"{FENCE}python\nprint(3)\n{FENCE}",
        "ground_truth": {"inputs": ["2\n"], "outputs": ["4\n"]},
    },
    {
        "data_source": "apps",
        "prompt": "Read a number and print its double.\n",
        "response": "",
        "ground_truth": {"inputs": ["2\n"], "outputs": ["4\n"]},
    },
]
EXPECTED = [(1.0, "accepted", True), (0.0, "wrong_answer", True), (0.0, "no_code", True)]


def _section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def readme_overrides() -> list[list[str]]:
    """The overrides of each ``main_ppo`` command in the guide's veRL section, with shell
    substitutions (``$(python -c ...)``) evaluated by bash as a user's shell would."""
    blocks = re.findall(r"```bash\n(.*?)```", _section("veRL"), re.DOTALL)
    commands = [b for b in blocks if "verl.trainer.main_ppo" in b]
    assert len(commands) == 2, "the guide shows the pkg:// and the file-path set-up"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = []
    for command in commands:
        words = command.replace("\\\n", " ").split("main_ppo", 1)[1]
        shown = subprocess.run(
            ["bash", "-c", f"printf '%s\\n' {words}"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.split("\n")
        out.append([w for w in shown if w])
    return out


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tokenizer")
    tiny_tokenizer(folder)
    return folder


def _config(overrides: list[str], tokenizer_dir: Path) -> Any:
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        # the model is the user's: here, the tokenizer made above
        return compose(
            "ppo_trainer",
            overrides=[*overrides, f"actor_rollout_ref.model.path={tokenizer_dir}"],
        )


def _score_with_the_reward_loop(config: Any) -> list[dict[str, Any]]:
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    worker = RewardLoopWorker(config)
    data = verl_batch(AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path), ROWS)
    outputs: list[dict[str, Any]] = worker.loop.run_until_complete(worker.compute_score_batch(data))
    rm_scores = worker.reward_manager.assemble_rm_scores(data, [o["reward_score"] for o in outputs])
    assert rm_scores.sum(dim=1).tolist() == [e[0] for e in EXPECTED]
    return outputs


def test_the_readme_shows_both_ways_of_naming_the_module() -> None:
    pkg, by_file = readme_overrides()
    assert "reward.custom_reward_function.path=pkg://assay.integrations.verl" in pkg
    path = next(o for o in by_file if o.startswith("reward.custom_reward_function.path="))
    assert path.endswith("/assay/integrations/verl.py") and Path(path.split("=", 1)[1]).is_file()


@pytest.mark.parametrize("which", [0, 1], ids=["pkg", "file-path"])
def test_readme_settings_score_through_verls_reward_loop(which: int, tokenizer_dir: Path) -> None:
    config = _config(readme_overrides()[which], tokenizer_dir)
    outputs = _score_with_the_reward_loop(config)
    got = [
        (o["reward_score"], o["reward_extra_info"]["verdict"], o["reward_extra_info"]["valid"])
        for o in outputs
    ]
    assert got == EXPECTED


def test_readme_url_option_through_verls_reward_loop(tokenizer_dir: Path, serve_url: str) -> None:
    """``reward_kwargs.url`` as the guide words it, against a live ``assay serve``: the
    MBPP asserts (script tests) are judged by the server, not masked."""
    overrides = readme_overrides()[0]
    shown = re.search(r"\+reward\.custom_reward_function\.reward_kwargs\.url=\S+", _section("veRL"))
    assert shown is not None
    key = shown.group(0).split("=", 1)[0]
    outputs = _score_with_the_reward_loop(
        _config([*overrides, f"{key}={serve_url}"], tokenizer_dir)
    )
    assert [o["reward_extra_info"]["verdict"] for o in outputs] == [e[1] for e in EXPECTED]


def test_compute_score_batch_through_verls_batch_reward_manager(tokenizer_dir: Path) -> None:
    """The legacy path (``reward_model.reward_manager=batch``): veRL's own
    ``BatchRewardManager`` class with the function loaded by veRL's loader."""
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://assay.integrations.verl",
                    "name": "compute_score_batch",
                    "reward_kwargs": {"reward": "binary"},
                }
            }
        }
    )
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    manager = get_reward_manager_cls("batch")(
        tokenizer, num_examine=0, compute_score=get_custom_reward_fn(config)
    )
    result = manager(verl_batch(tokenizer, ROWS), return_dict=True)
    assert result["reward_tensor"].sum(dim=1).tolist() == [e[0] for e in EXPECTED]
    assert result["reward_extra_info"]["verdict"] == [e[1] for e in EXPECTED]
