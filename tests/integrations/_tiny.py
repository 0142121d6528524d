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
