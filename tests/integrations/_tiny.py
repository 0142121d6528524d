"""A tokenizer made on this machine (no hub; the example's: trained with ``tokenizers`` on a
little local text, saved where a trainer loads it by path) and a veRL ``DataProto`` built
with it. Used by the veRL reward-loop and TRL GRPO tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

FENCE = "`" * 3

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_train.py"


def example() -> ModuleType:
    """``examples/trl_grpo_train.py`` as a module: its tokenizer and model builders are the
    ones the tests use, so the example is what is tested."""
    spec = importlib.util.spec_from_file_location("trl_grpo_train", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_tokenizer(folder: Path) -> Any:
    """The example's byte-level BPE tokenizer (a few hundred tokens), saved in ``folder``."""
    return example().build_tokenizer(folder)


def verl_batch(tokenizer: Any, rows: list[dict[str, Any]], width: int = 64) -> Any:
    """A veRL ``DataProto`` as its rollout hands it to the reward loop: left-padded prompt
    ids, right-padded response ids, the attention mask over both, and the row's
    ``data_source``, ``reward_model.ground_truth`` and ``extra_info``."""
    import numpy as np
    import torch
    from verl import DataProto

    def encode(texts: list[str], left: bool) -> tuple[Any, Any]:
        ids = torch.full((len(texts), width), tokenizer.pad_token_id)
        mask = torch.zeros((len(texts), width), dtype=torch.long)
        for i, text in enumerate(texts):
            x = torch.tensor(tokenizer(text)["input_ids"][:width], dtype=torch.long)
            at = slice(width - len(x), width) if left else slice(0, len(x))
            ids[i, at], mask[i, at] = x, 1
        return ids, mask

    prompts, prompt_mask = encode([r["prompt"] for r in rows], left=True)
    responses, response_mask = encode([r["response"] for r in rows], left=False)
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "input_ids": torch.cat([prompts, responses], 1),
            "attention_mask": torch.cat([prompt_mask, response_mask], 1),
        },
        non_tensors={
            "data_source": np.array([r["data_source"] for r in rows], dtype=object),
            "reward_model": np.array(
                [{"ground_truth": r["ground_truth"]} for r in rows], dtype=object
            ),
            "extra_info": np.array([{} for _ in rows], dtype=object),
        },
    )
