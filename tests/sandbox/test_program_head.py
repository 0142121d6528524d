"""What a program process takes from its spec once the C steps have taken the request
(``program.program_head``): the mode, argv and env, the env None when it is the slot's
default (``os.environ`` already holds it), read from the bytes the supervisor sends
(``_launch.encode_spec``); and a run sees the environment it asked for, in both modes."""

from __future__ import annotations

import json
import os

from hypothesis import given
from hypothesis import strategies as st

from assay import Runner, defaults
from assay.sandbox._inside import program
from assay.sandbox._inside.arming import Arming
from assay.sandbox._launch import encode_spec
from assay.sandbox._run import RunRequest

DEFAULT = dict(defaults.SANDBOX_ENV)
# What Arming builds from the fork server's configuration (only default_env is read).
ARMING = Arming(
    {"workdir": "/work", "uid": 1, "gid": 1, "userns": False, "default_env": DEFAULT},
    None,
    None,
    0,
    [],
)
text = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)))
names = st.text(st.characters(blacklist_characters="\0=", blacklist_categories=("Cs",)), min_size=1)


def _spec(mode: str, argv: list[str], env: dict[str, str]) -> bytes:
    files = [("main.py", b"print(1)\n", 0o644)]
    return encode_spec(mode, argv, env, (1 << 20, 64, 8 << 20, 10), files, b"")[0]


@given(
    mode=st.sampled_from(["python", "exec"]),
    argv=st.lists(text, min_size=1, max_size=4),
    extra=st.dictionaries(names, text, max_size=3),
    default=st.booleans(),
)
def test_the_head_is_what_the_supervisor_sent(
    mode: str, argv: list[str], extra: dict[str, str], default: bool
) -> None:
    env = DEFAULT if default else {**DEFAULT, **extra}
    head = program.program_head(_spec(mode, argv, env), ARMING.default_env_spec)
    assert head[:2] == (mode, argv)
    if env == DEFAULT:  # the same variables in the same order: the slot's own env
        assert head[2] is None
    else:
        assert head[2] == env
    # The full parse (the Python steps' own) agrees.
    spec = program.Spec.parse(_spec(mode, argv, env))
    assert (spec.mode, spec.argv, spec.env) == (mode, argv, env)


def test_an_env_like_the_default_but_one_value_or_its_order_is_not_the_default() -> None:
    changed = {**DEFAULT, "HOME": "/work"}
    reordered = dict(reversed(list(DEFAULT.items())))
    fewer = dict(list(DEFAULT.items())[:-1])
    for env in (changed, reordered, fewer, {}):
        head = program.program_head(
            _spec("python", ["/work/main.py"], env), ARMING.default_env_spec
        )
        assert head == ("python", ["/work/main.py"], env)


PROBE = "import json, os, sys\nprint(json.dumps([dict(os.environ), sys.argv[1:]]))\n"


def test_a_run_sees_the_environment_it_asked_for(runner: Runner) -> None:
    # Alternately on the same slots: a run with its own env must not leave it to the next.
    for env in (DEFAULT, {**DEFAULT, "ASSAY_X": "1", "HOME": "/work"}, DEFAULT, {"ONLY": "x"}):
        r = runner.execute(
            RunRequest(
                "python",
                ["/work/main.py", "a", "b c"],
                files=[("main.py", PROBE.encode(), 0o644)],
                env=env,
            )
        )
        assert r.status == "ok", r
        seen, args = json.loads(r.stdout)
        assert seen == env and args == ["a", "b c"]
        sh = runner.execute(RunRequest("exec", ["/usr/bin/env"], env=env))
        assert sh.status == "ok", sh
        assert dict(line.split("=", 1) for line in sh.stdout.decode().splitlines()) == env


def test_the_default_env_spec_is_the_supervisors_encoding() -> None:
    count, blob = ARMING.default_env_spec
    encoded = _spec("python", ["/work/main.py"], DEFAULT)
    assert f"\0{count.decode()}\0".encode() + blob in encoded
    assert os.fsencode("PATH=" + DEFAULT["PATH"]) + b"\0" in blob
