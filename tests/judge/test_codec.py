"""One value codec on both sides of the sandbox boundary (``judge/_inside/codec.py``).

The trusted side (``assay.judge.values``) imports the module that the judge ships into the
sandbox, so a value written by either side reads back as itself on the other: checked here
in process and through a real sandbox running the shipped file.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay import Runner
from assay.judge import _trusted, values
from assay.judge._inside import codec

plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=1 << 20000, max_value=1 << 20001)  # past the 4300-digit limit
    | st.floats()
    | st.complex_numbers()
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=3)
        | st.sets(st.integers() | st.binary(max_size=3), max_size=3)
        | st.dictionaries(st.text(max_size=5) | st.integers() | st.none(), inner, max_size=4)
    ),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal with exact types at every depth (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _sandbox_special(tag: str, data: list[Any], depth: int) -> Any:
    if tag == "T":
        return codec.BUILTIN_TYPES[codec.exact(data[1], str)]
    raise codec.Malformed(tag)


@given(plain)
def test_trusted_to_sandbox_side(value: Any) -> None:
    """What the trusted side writes (arguments), the sandbox side reads as the same value."""
    wire = json.loads(json.dumps(values.encode(value)))
    assert same(codec.decode(wire, _sandbox_special), value)


@given(plain)
def test_sandbox_to_trusted_side(value: Any) -> None:
    """What the sandbox side writes (results), the trusted side decodes as the same value."""
    wire = json.loads(json.dumps(codec.encode(value, lambda v, d: ["o", 0, True, "x"])))
    assert same(values.decode(wire), value)


def test_the_trusted_side_uses_the_shipped_module() -> None:
    assert values.BadValue is codec.Malformed
    assert values.MAX_DEPTH == codec.MAX_DEPTH
    assert _trusted.source(_trusted.CODEC).startswith(b'"""The one value codec')


ECHO = b"""
import json, sys
from _assay_codec import decode, encode
for line in sys.stdin:
    print(json.dumps(encode(decode(json.loads(line)))))
"""


@settings(max_examples=40, deadline=None)
@given(st.lists(plain, min_size=1, max_size=8))
def test_round_trip_through_a_real_sandbox(runner: Runner, batch: list[Any]) -> None:
    """Trusted encode -> shipped codec decodes and re-encodes inside the sandbox -> trusted
    decode: every value comes back as itself, with its exact types."""
    codec_file = ("_assay_codec.py", _trusted.source(_trusted.CODEC))  # what the scripts bundle
    stdin = "".join(json.dumps(values.encode(v)) + "\n" for v in batch)
    result = runner.run(ECHO, stdin=stdin, files={codec_file[0]: codec_file[1]})
    assert result.status == "ok", result.stderr.decode(errors="replace")[-500:]
    back = [values.decode(json.loads(line)) for line in result.stdout.decode().splitlines()]
    assert len(back) == len(batch)
    for got, want in zip(back, batch, strict=True):
        assert same(got, want), (got, want)
