"""The Ray guide's (docs/guides/ray.md) local cluster for ``--ray``: its commands as it shows
them (a token made with ``ray get-auth-token --generate``, ``RAY_AUTH_MODE=token`` exported,
``ray start`` with its flags), joined through Ray Client (``ray://``), which the ``ray``
extra must bring (``ray[client]``: grpcio). Under a home of the test's own, so the result
does not depend on whether this machine's ``~/.ray/auth_token`` exists (Ray 2.60's
``ray start`` turns token authentication on by itself when it does, and a client given an
address then fails to join unless ``RAY_AUTH_MODE`` says token). (Ray's GCS and raylets
listen on every interface whatever the flags: the guide says so and names the remedies;
nothing here claims otherwise.) The head runs with ``--block`` in its own process group,
stopped by a signal to that group (never ``ray stop``, which would stop every Ray process of
the machine, other tests' clusters included)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

README = Path(__file__).resolve().parents[3] / "docs" / "guides" / "ray.md"
RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _readme_start() -> list[str]:
    text = README.read_text()
    m = re.search(r"^ray start --head .*?(?<!\\)\n", text, re.DOTALL | re.MULTILINE)
    assert m is not None, "the Ray guide shows how to start a local cluster"
    return shlex.split(m.group(0).replace("\\\n", " "))


def _readme_setup(home: str) -> dict[str, str]:
    """The environment the guide's lines before ``ray start`` make: its token made (under
    ``home``) and its ``export``s."""
    text = README.read_text()
    block = text[: text.index("\nray start --head ")]
    block = block[block.rindex("```bash\n") + len("```bash\n") :]
    env = {**os.environ, "HOME": home}
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            env[name] = value
        elif words[:2] == ["ray", "get-auth-token"]:
            assert words[-2:] == [">", "/dev/null"], line  # the token is printed: not shown
            subprocess.run([str(RAY), *words[1:-2]], env=env, check=True, stdout=subprocess.DEVNULL)
        else:
            raise AssertionError(f"a line of the guide this test does not follow: {line!r}")
    assert env.get("RAY_AUTH_MODE") == "token", "the guide turns Ray's token authentication on"
    assert os.path.exists(os.path.join(home, ".ray", "auth_token"))
    return env


def test_readme_local_cluster_joins_through_ray_client() -> None:
    if not RAY.exists():
        pytest.skip("ray is not installed (pip install 'assay[ray]')")
    gcs, client = _free_port(), _free_port()
    args = _readme_start()
    args = [a.replace("6379", str(gcs)).replace("10001", str(client)) for a in args]
    # a short temp dir: Ray's socket paths live under it (pytest's tmp_path is too long)
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        env = _readme_setup(os.path.join(temp, "home"))
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    cmd = [str(RAY), *args[1:], "--block", f"--temp-dir={temp}", "--disable-usage-stats"]
    head = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=env
    )
    try:
        joined = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and head.poll() is None:
            joined = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import ray; ray.init('ray://127.0.0.1:{client}'); "
                    "print(ray.get(ray.remote(lambda: 6 * 7).remote()))",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            if joined.returncode == 0:
                break
            time.sleep(1)
        assert joined is not None and joined.returncode == 0, (joined.stderr if joined else "")[
            -2000:
        ] + (head.stderr.read().decode() if head.poll() is not None and head.stderr else "")
        assert joined.stdout.strip().splitlines()[-1] == "42"
    finally:
        try:
            os.killpg(head.pid, signal.SIGTERM)
            head.wait(60)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)
