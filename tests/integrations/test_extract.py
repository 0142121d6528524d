"""Which code a response yields: the last block, preferring the requested language."""

from __future__ import annotations

from assay.integrations import extract_code

F = "`" * 3


def test_last_block_of_the_language_wins_over_later_other_blocks() -> None:
    text = f"{F}python\nold = 1\n{F}\n{F}python\nnew = 2\n{F}\nRun it:\n{F}bash\npython a.py\n{F}"
    assert extract_code(text) == "new = 2\n"


def test_aliases_and_untagged_blocks() -> None:
    assert extract_code(f"{F}py\nx = 1\n{F}") == "x = 1\n"
    assert extract_code(f"{F}\nx = 2\n{F}") == "x = 2\n"
    assert extract_code(f"{F}c++\nint main(){{}}\n{F}", "cpp") == "int main(){}\n"
    assert extract_code(f"{F}\nuntagged\n{F}\n{F}rust\nfn main(){{}}\n{F}", "rust") == (
        "fn main(){}\n"
    )


def test_no_block_gives_the_whole_text() -> None:
    assert extract_code("print(1)\n") == "print(1)"


def test_unclosed_block_runs_to_the_end() -> None:
    assert extract_code(f"Sure:\n{F}python\nprint(1)\n") == "print(1)\n"


def test_reasoning_is_dropped() -> None:
    text = f"<think>{F}python\ndraft()\n{F}</think>\nFinal:\n{F}python\nfinal()\n{F}"
    assert extract_code(text) == "final()\n"


def test_tilde_fences_and_indented_closing_fence() -> None:
    assert extract_code("~~~python\nx = 3\n~~~") == "x = 3\n"
    assert extract_code(f"  {F}python\nx = 4\n  {F}") == "x = 4\n"


def test_a_completion_that_closes_the_prompts_fence_is_its_code() -> None:
    """The prompt ends with an opening fence; the completion is the code, then the closing
    fence (issue 29: it extracted to empty code, so a correct answer scored 0)."""
    completion = f"def f(x):\n    return x + 1\n{F}\n"
    assert extract_code(completion) == "def f(x):\n    return x + 1\n"


def test_the_closing_fence_may_be_followed_by_prose_and_more_blocks() -> None:
    completion = f"def f(x):\n    return x\n{F}\nThis returns x. Test it with:\n{F}\nf(1)\n{F}\n"
    assert extract_code(completion) == "f(1)\n"
    assert (
        extract_code(f"def f(x):\n    return x\n{F}\nThat is all.") == "def f(x):\n    return x\n"
    )


def test_a_response_opening_its_own_untagged_block_is_unchanged() -> None:
    assert extract_code(f"Here:\n{F}\nx = 2\n{F}\n") == "x = 2\n"
