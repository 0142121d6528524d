"""TRL's GRPOTrainer trained end to end with Assay's reward, on a model built on this machine.

Nothing comes from a hub: the tokenizer is trained here on a few lines of text, and the model
is a randomly initialised two-layer Llama of ~50k parameters. It writes nonsense, so the point
is the loop, not the learning: TRL generates completions, Assay judges them in its sandbox
(in-process, or on an ``assay serve`` with ``--url``), and the rewards, the verdict mix and
the share of unusable rows land in TRL's own logs. Needs the ``trainers`` extra (torch CPU,
transformers, trl)::

    .venv/bin/python examples/trl_grpo_train.py [--url http://127.0.0.1:8080] [--steps 3]

Prints one JSON line per run: the mode, the rewards TRL logged per step, Assay's verdict
metrics, and the completions of the last step with their rewards (so a caller can judge
them again and compare).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

FENCE = "`" * 3

#: The training set: prompts that end with an opening fence (the completion is the code,
#: then a closing fence) and the tests in the TRL-friendly ``verification_info`` column.
ROWS = [
    {
        "prompt": f"Print nothing at all.\n{FENCE}python\n",
        "verification_info": json.dumps({"inputs": [""], "outputs": [""]}),
    },
    {
        "prompt": f"Read a number and print its double.\n{FENCE}python\n",
        "verification_info": json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]}),
    },
]

#: What the tokenizer learns its merges from.
CORPUS = [row["prompt"] for row in ROWS] + [
    "print(2 * int(input()))\n",
    f"x = 1\n{FENCE}\n",
    "def f(x):\n    return x + 1\n",
]


def build_tokenizer(folder: Path) -> Any:
    """A byte-level BPE tokenizer of ~300 tokens trained on :data:`CORPUS`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
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


def build_model(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised two-layer causal LM (Llama architecture, hidden size 32)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)


def train(url: str | None, steps: int, workdir: Path) -> dict[str, Any]:
    """``steps`` GRPO steps with Assay's binary reward; what TRL logged."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from assay.integrations.trl import make_reward_func

    tokenizer = build_tokenizer(workdir / "tokenizer")
    model = build_model(tokenizer)
    args = GRPOConfig(
        output_dir=str(workdir / "out"),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=12,
        max_steps=steps,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        seed=0,
        log_completions=False,
        disable_tqdm=True,
    )
    dataset = Dataset.from_list(ROWS)
    reward = make_reward_func(column="verification_info", url=url)
    trainer = GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        reward_funcs=[reward],
        processing_class=tokenizer,
    )
    trainer.train()
    logged = [h for h in trainer.state.log_history if "reward" in h]
    name = reward.__name__
    logs: Any = trainer._logs  # the last steps' completions and per-function rewards
    return {
        "mode": "url" if url else "in-process",
        "steps": len(logged),
        "rewards": [h["reward"] for h in logged],
        "reward_means": [h[f"rewards/{name}/mean"] for h in logged],
        "accepted": [h[f"{name}/accepted"] for h in logged],
        "unusable": [h[f"{name}/unusable"] for h in logged],
        "last": {
            "prompts": list(logs["prompt"]),
            "completions": list(logs["completion"]),
            "rewards": list(logs["rewards"][name]),
            "verdicts": list(logs["extra"].get(f"{name}_verdict", [])),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="judge on this assay serve (also runs in-process first)")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for url in [None, args.url] if args.url else [None]:
            workdir = Path(tmp) / ("url" if url else "local")
            print(json.dumps(train(url, args.steps, workdir)), flush=True)


if __name__ == "__main__":
    main()
