from __future__ import annotations

import ast

from assay.testgen.mutants import mutants

REF = '''def f(xs, k):
    """Docstrings are never mutated."""
    total = 0
    for i in range(len(xs)):
        if xs[i] < k and not xs[i] == 0:
            total += xs[i] * 2
    return total - 1
'''


def test_mutants_cover_every_operator_family_and_each_changes_one_thing() -> None:
    ms = mutants(REF, seed=0, limit=500)
    ops = {m.operator.split()[0] for m in ms}
    assert {"binop", "compare", "boolop", "constant", "boundary", "remove"} <= ops
    original = ast.unparse(ast.parse(REF))
    for m in ms:
        assert m.source != original
        compile(m.source, "<m>", "exec")
        assert "Docstrings are never mutated." in m.source
    assert len({m.source for m in ms}) == len(ms)


def test_same_seed_same_mutants_and_the_limit_holds() -> None:
    assert mutants(REF, seed=1, limit=5) == mutants(REF, seed=1, limit=5)
    assert len(mutants(REF, seed=1, limit=5)) == 5
