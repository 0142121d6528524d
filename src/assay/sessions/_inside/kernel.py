"""A persistent Python interpreter for notebook cells (stdlib only; runs in a session).

Reads one JSON object per line on fd 4 (``{"code": ...}``), runs the code in one module
namespace that carries over from cell to cell, and writes one JSON line on fd 3: the cell's
stdout, stderr, the value of a final expression (as Jupyter displays it: ``text/plain``),
and the error if one was raised (name, value, traceback lines).
"""

import ast
import io
import json
import os
import sys
import traceback
from typing import Any

NAMESPACE: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}


def run_cell(code: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    display: list[dict[str, str]] = []
    error: dict[str, Any] | None = None
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        tail = tree.body[-1] if tree.body else None
        if isinstance(tail, ast.Expr):
            tree.body.pop()
            last = ast.Expression(tail.value)
        exec(compile(tree, "<cell>", "exec"), NAMESPACE)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), NAMESPACE)
            if value is not None:
                NAMESPACE["_"] = value
                display.append({"text/plain": repr(value)})
    except BaseException as exc:  # a cell's error is its result
        if isinstance(exc, SystemExit) and not exc.code:
            pass
        else:
            error = {
                "ename": type(exc).__name__,
                "evalue": str(exc),
                "traceback": traceback.format_exception(
                    type(exc), exc, exc.__traceback__ and exc.__traceback__.tb_next
                ),
            }
    finally:
        sys.stdout, sys.stderr = saved
    return {
        "status": "ok" if error is None else "error",
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "display": display,
        "error": [error] if error else [],
    }


def main() -> None:
    reply = os.fdopen(3, "w")
    for line in os.fdopen(4):
        result = run_cell(json.loads(line)["code"])
        reply.write(json.dumps(result) + "\n")
        reply.flush()


main()
