"""A small agent task shared by the adapter tests (native format)."""

TASK = {
    "task_id": "calc",
    "instructions": "add() in calc.py is wrong; fix it.",
    "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
    "tests": {
        "test_hidden.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        "\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    },
    "reference_patch": "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n",
}
FIX = "```bash\nsed -i 's/a - b/a + b/' calc.py\n```"
