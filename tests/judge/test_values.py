from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import ValidationError
from assay.judge.values import BadValue, Iterated, Opaque, decode, encode, equal
from assay.judge.values import plain as plain_of

plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(plain)
def test_roundtrip_is_identity(value: object) -> None:
    back = decode(encode(value))
    assert equal(back, value)
    assert type(back) is type(value)


def test_subclasses_and_objects_are_refused() -> None:
    class Liar(str):
        def __eq__(self, other: object) -> bool:
            return True

    for bad in (Liar("x"), object(), lambda: 1):
        with pytest.raises(ValidationError):
            encode(bad)


@pytest.mark.parametrize(
    "data",
    [
        ["x"],
        [],
        "s",
        ["i", 5],
        ["l", "notalist"],
        ["d", [["s"]]],
        ["f", 1.0],
        ["b", 1],
        ["S", [["l", []]]],  # unhashable member
        ["d", [[["l", []], ["n"]]]],  # unhashable key
        ["i", "zz"],
        ["o", 1],
    ],
)
def test_malformed_data_is_rejected(data: object) -> None:
    with pytest.raises(BadValue):
        decode(data)


def test_equality_rules() -> None:
    # Python's ``==``, as MBPP's ``assert f(x) == 240`` decides (issue 29).
    assert equal(240.0, 240)
    assert equal(0, False)
    assert equal(True, 1)
    assert equal({1, 2}, frozenset({1, 2}))
    assert equal([1, [2.0]], [1, [2]])
    assert not equal("1", 1)
    assert not equal(None, 0)
    assert equal([math.nan], [math.nan])
    assert not equal([1], (1,))
    assert equal(1, 1.0)
    assert not equal(1.0000001, 1.0)
    assert equal(1.0000001, 1.0, atol=1e-6)
    assert equal(math.nan, math.nan)
    assert not equal(1.0, math.nan)
    assert not equal(math.inf, 1e308, atol=1e300)


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=25,
)


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _builtins_only(value: object) -> bool:
    """Made of builtin types only, by exact type (no subclass), at any depth; the decoder's
    own records of an opaque object or an iterator hold builtin values too."""
    if type(value) in _PLAIN:
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(_builtins_only(v) for v in value)  # type: ignore[attr-defined]
    if type(value) is dict:
        return all(_builtins_only(k) and _builtins_only(v) for k, v in value.items())  # type: ignore[attr-defined]
    if type(value) is Opaque:
        return type(value.type_name) is str and type(value.truthy) is bool  # type: ignore[attr-defined]
    if type(value) is Iterated:
        return type(value.type_name) is str and _builtins_only(value.items)  # type: ignore[attr-defined]
    return False


tagged = st.recursive(
    st.just(["n"])
    | st.booleans().map(lambda b: ["b", b])
    | st.integers().map(lambda i: ["i", format(i, "x")])
    | st.floats().map(lambda f: ["f", repr(f)])
    | st.text(max_size=6).map(lambda t: ["s", t])
    | st.binary(max_size=6).map(lambda b: ["y", b.decode("latin-1")])
    | st.tuples(st.text(max_size=6), st.booleans()).map(lambda o: ["o", 0, o[1], o[0]]),
    lambda inner: (
        st.tuples(st.sampled_from(["l", "t"]), st.lists(inner, max_size=4)).map(list)
        | st.lists(inner, max_size=4).map(lambda xs: ["g", "generator", bool(xs), xs])
        | st.lists(st.tuples(st.text(max_size=3), inner), max_size=3).map(
            lambda kv: ["d", [[["s", k], v] for k, v in kv]]
        )
    ),
    max_leaves=20,
)


@given(json_like | tagged)
def test_decoder_never_fails_other_than_badvalue(data: object) -> None:
    """Whatever a hostile submission sends back, the trusted decoder either returns builtin
    values or raises BadValue: never another exception, and never an object of another type
    (which could bring its own ``__eq__`` to the comparison)."""
    try:
        value = decode(data)
    except BadValue:
        return
    assert _builtins_only(value), repr(value)


@given(
    st.lists(
        st.sampled_from(["n", "b", "i", "f", "c", "s", "y", "l", "t", "S", "F", "d", "o", "x"]),
        min_size=1,
        max_size=3,
    ),
    json_like,
)
def test_tagged_garbage_is_rejected_cleanly(tags: list[str], payload: object) -> None:
    try:
        decode([*tags, payload])
    except BadValue:
        pass


@given(plain)
def test_plain_gives_a_value_without_iterated_back_as_it_is(value: object) -> None:
    assert plain_of(value) is value  # nothing copied: compared, never changed


def test_plain_rebuilds_every_iterated_at_any_depth() -> None:
    gen = Iterated("generator", False, [1, Iterated("map", False, [2, 3])])
    value = {"a": [0, (gen,)], "b": frozenset({4})}
    assert plain_of(value) == {"a": [0, ([1, [2, 3]],)], "b": frozenset({4})}
    assert type(plain_of(value)["a"][1]) is tuple
    assert plain_of([1, 2, Iterated("range", False, [0, 1])]) == [1, 2, [0, 1]]
    assert equal(gen, [1, [2, 3]]) and not equal(gen, [1, 2, 3])
