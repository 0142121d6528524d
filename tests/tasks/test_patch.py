"""Unified diffs: changed lines in original coordinates, sizes, workspace diffs."""

from __future__ import annotations

from assay.tasks.patch import diff_size, parse_patch, unified_diff


def test_changed_lines_of_a_patch() -> None:
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -2,4 +2,4 @@\n a\n--- not a header\n+b\n c\n d\n"
        "@@ -10,0 +11,2 @@\n+e\n+f\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+g\n"
    )
    got = parse_patch(patch)
    assert got.lines == {"m.py": {3, 9}, "new.py": {1}}
    assert (got.added, got.removed, got.size) == (4, 1, 5)


def test_workspace_diff_round_trips_through_parse() -> None:
    before = {"a.py": b"1\n2\n3\n", "gone.py": b"x\n"}
    after = {"a.py": b"1\nTWO\n3\n", "new.py": b"y\n", "bin": b"\xff"}
    text = unified_diff(before, after)
    assert parse_patch(text).lines == {"a.py": {2}, "gone.py": {1}, "new.py": {1}, "bin": {1}}
    assert diff_size(before, after) == 2 + 1 + 1 + 2
    assert diff_size(before, before) == 0


def test_a_diff_without_final_newlines_applies() -> None:
    from assay.tasks._git import apply_patch

    before = {"s.py": b"def f():\n    return 1"}
    after = {"s.py": b"def f():\n    return 2\n# done"}
    text = unified_diff(before, after)
    assert "\\ No newline at end of file" in text
    assert apply_patch(before, text, "patch") == after
    assert parse_patch(text).lines == {"s.py": {2}}
