"""A real GRPO loop: TRL's ``GRPOTrainer`` trains a model built on this machine with Assay's
reward, in-process and against a live ``assay serve``; the trainers guide's TRL block runs as shown.
Needs the ``trainers`` extra (torch CPU, transformers, trl)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install 'assay[trainers]')")
pytest.importorskip("trl", reason="trl is not installed (pip install 'assay[trainers]')")

from assay import LocalExecutor
from assay.integrations.trl import make_reward_func

from ._tiny import EXAMPLE, example

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _rejudge(run: dict[str, Any], executor: LocalExecutor) -> list[float | None]:
    """The last step's completions judged again, in-process, against their rows' tests."""
    tests = {row["prompt"]: row["verification_info"] for row in example().ROWS}
    last = run["last"]
    f = make_reward_func(executor=executor)
    return f(
        prompts=last["prompts"],
        completions=last["completions"],
        verification_info=[tests[p] for p in last["prompts"]],
    )


def test_grpo_trains_with_assays_reward_in_process_and_on_serve(
    serve_url: str, executor: LocalExecutor
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", serve_url, "--steps", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"mode"')]
    assert [r["mode"] for r in runs] == ["in-process", "url"]
    for run in runs:
        assert run["steps"] == 3
        # binary reward, nothing unusable: the step's mean reward is its accepted share
        assert run["unusable"] == [0.0, 0.0, 0.0]
        assert run["rewards"] == run["reward_means"] == run["accepted"]
        assert len(run["last"]["completions"]) == len(run["last"]["verdicts"]) > 0
        assert run["last"]["rewards"] == _rejudge(run, executor)


def test_the_guides_trl_block_trains_as_shown(serve_url: str, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "guides" / "trainers.md").read_text()
    section = text[text.index("## TRL\n") :]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    shown = [b for b in blocks if "trainer.train()" in b]
    assert len(shown) == 1, "the trainers guide shows one GRPOTrainer set-up"
    code = shown[0]
    assert "http://127.0.0.1:8080" in code
    code = code.replace("http://127.0.0.1:8080", serve_url)  # the address of this test's server

    ex = example()
    from datasets import Dataset
    from trl import GRPOConfig

    # a model folder, as a user names one (TRL loads the model and its tokenizer from it)
    model_dir = tmp_path / "model"
    ex.build_model(ex.build_tokenizer(model_dir)).save_pretrained(model_dir)
    ns: dict[str, Any] = {
        "model": str(model_dir),
        "args": GRPOConfig(
            output_dir=str(tmp_path / "out"),
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=8,
            max_steps=1,
            logging_steps=1,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            disable_tqdm=True,
        ),
        "dataset": Dataset.from_list(ex.ROWS),
    }
    exec(compile(code, "docs/guides/trainers.md:TRL", "exec"), ns)
    logged = [h for h in ns["trainer"].state.log_history if "rewards/assay_binary/mean" in h]
    assert len(logged) == 1
    assert logged[0]["assay_binary/unusable"] == 0.0
    # the url= form shown beside it judges the same rows the same way
    row = ex.ROWS[1]
    completions = ["print(2 * int(input()))\n" + "`" * 3, "print(3)"]
    kwargs = {"verification_info": [row["verification_info"]] * 2}
    assert ns["remote"](prompts=[row["prompt"]] * 2, completions=completions, **kwargs) == [
        1.0,
        0.0,
    ]
    assert ns["reward"](prompts=[row["prompt"]] * 2, completions=completions, **kwargs) == [
        1.0,
        0.0,
    ]
