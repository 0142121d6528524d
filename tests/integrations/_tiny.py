"""A tokenizer made on this machine (no hub): trained with ``tokenizers`` on a little local
text, wrapped as a ``transformers`` fast tokenizer and saved where a trainer can load it by
path. Used by the veRL reward-loop and TRL GRPO tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FENCE = "`" * 3

#: What the tokenizer is trained on: the prompts and programs of the tests.
CORPUS = [
    f"Write inc.\n{FENCE}python\ndef inc(x):\n    return x + 1\n{FENCE}\n",
    "Read a number and print its double.\nprint(2 * int(input()))\n",
    "def area(a, b):\n    return a * b\nassert area(10, 24) == 240\n",
    "while True:\n    pass\nprint(3)\nimport sys\n",
]


def tiny_tokenizer(folder: Path) -> Any:
    """A byte-level BPE tokenizer of a few hundred tokens, saved in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )
    fast.save_pretrained(str(folder))
    return fast


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
