"""The agent ships as bytecode when the sandbox's interpreter reads ours, else as source."""

from __future__ import annotations

from importlib.util import MAGIC_NUMBER

from assay import Runner
from assay.sessions._agentfile import agent_file
from assay.sessions._args import AGENT, AGENT_PYC


def test_bytecode_once_the_interpreter_is_known(runner: Runner) -> None:
    runner.run("pass")  # the fork server has reported its bytecode magic by now
    name, data = agent_file(runner)
    if runner.bytecode_magic == MAGIC_NUMBER.hex():
        assert name == AGENT_PYC and data.startswith(MAGIC_NUMBER)
    else:
        assert name == AGENT and data.startswith(b'"""')
    assert agent_file(None)[0] == AGENT


def test_a_session_started_from_bytecode_answers(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    assert s.exec("echo ok").stdout == b"ok\n"
    assert ".assay_agent.pyc" not in s.exec("ls -a /work").stdout.decode()
