"""Assay as a TRL GRPO reward function, called here the way GRPOTrainer calls it.

With TRL installed, the wiring is:

    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer
    from assay.integrations.trl import make_reward_func

    ds = load_dataset("open-r1/verifiable-coding-problems-python", split="train")
    trainer = GRPOTrainer(
        model="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        reward_funcs=[make_reward_func(column="verification_info")],   # logged as assay_binary
        args=GRPOConfig(output_dir="out", num_generations=8),
        train_dataset=ds,
    )
    trainer.train()

TRL passes ``prompts``, ``completions`` and every other dataset column as keyword lists;
the function returns one float per completion, or None for a row it cannot judge (TRL
leaves those out). No TRL is needed to run this file:

    .venv/bin/python examples/trl_grpo_reward.py
"""

from __future__ import annotations

import asyncio

from assay.integrations.trl import make_reward_func, make_reward_func_async

FENCE = "`" * 3

INFO = {
    "language": "python",
    "test_cases": [
        {"type": "stdin_stdout", "input": "3\n", "output": "6\n"},
        {"type": "stdin_stdout", "input": "10\n", "output": "20\n"},
    ],
}
GOOD = f"Double it:\n{FENCE}python\nprint(2 * int(input()))\n{FENCE}"
WRONG = f"{FENCE}python\nprint(int(input()) + 3)\n{FENCE}"


def main() -> None:
    binary = make_reward_func(column="verification_info")
    fraction = make_reward_func(column="verification_info", reward="fraction")

    prompts = ["Double the number."] * 4
    completions = [GOOD, WRONG, GOOD, WRONG]
    columns = {"verification_info": [INFO, INFO, INFO, None]}  # the last row has no tests
    print(binary.__name__, binary(prompts=prompts, completions=completions, **columns))
    print(fraction.__name__, fraction(prompts=prompts, completions=completions, **columns))

    # Conversational datasets: completions are message lists.
    chats = [[{"role": "assistant", "content": c}] for c in (GOOD, WRONG)]
    print(
        "conversational",
        binary(prompts=prompts[:2], completions=chats, verification_info=[INFO, INFO]),
    )

    # TRL also awaits async reward functions.
    async_binary = make_reward_func_async(column="verification_info")
    print(
        "async",
        asyncio.run(
            async_binary(
                prompts=prompts[:2], completions=[GOOD, WRONG], verification_info=[INFO, INFO]
            )
        ),
    )


if __name__ == "__main__":
    main()
