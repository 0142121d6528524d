"""Claim: closing one sandbox pool never disables another pool of the same process.

Services hold several pools (per tenant, per limits class) and close them independently. The
pools of one process must not share anything a ``close()`` destroys: after pool B is closed,
pool A still runs programs (``ok``, never ``sandbox_error``), including a pool A that had not
run anything yet. The scenario runs in a child interpreter so this test cannot damage the
pools of the test session itself.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCENARIO = r"""
import json
import assay

a = assay.Runner()                          # created, not used yet
with assay.Runner(assay.Sandbox(pool_size=1)) as b:
    first = b.run("print('b')").status
statuses = [a.run("print('a')").status for _ in range(3)]
a.close()
print(json.dumps({"b": first, "a": statuses}))
"""


def test_closing_one_pool_leaves_the_other_working() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=90, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"b": "ok", "a": ["ok", "ok", "ok"]}, report
