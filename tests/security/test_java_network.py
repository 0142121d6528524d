"""Claim: a Java program has no network: TCP connections to a server on the host's loopback
and to public addresses (1.1.1.1:53, 8.8.8.8:443) fail at once, and the host server never sees
a connection.

"At once" matters: a connect that merely timed out would still be probing the network. Only
the sandboxed program sends anything; the host never talks to the public addresses.
"""

from __future__ import annotations

import shutil
import socket

import pytest

from assay import Limits

if shutil.which("javac") is None:
    pytest.skip("no OpenJDK (javac) on this host", allow_module_level=True)

PROGRAM = r"""
import java.net.*;
import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        int port = new Scanner(System.in).nextInt();
        String[][] targets = {{"127.0.0.1", "" + port}, {"1.1.1.1", "53"}, {"8.8.8.8", "443"}};
        for (String[] t : targets) {
            long start = System.nanoTime();
            String outcome;
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(t[0], Integer.parseInt(t[1])), 3000);
                s.getOutputStream().write("escaped".getBytes());
                outcome = "connected";
            } catch (Exception e) {
                outcome = "failed:" + e.getClass().getSimpleName();
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            System.out.println(t[0] + " " + outcome + " " + ms);
        }
    }
}
"""


def test_java_cannot_connect_anywhere(runner) -> None:  # type: ignore[no-untyped-def]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.setblocking(False)
    try:
        port = server.getsockname()[1]
        result = runner.run(PROGRAM, "java", f"{port}\n", Limits(time_s=5, wall_s=20))
        try:
            conn, peer = server.accept()
            conn.close()
            pytest.fail(f"the host server accepted a connection from {peer}")
        except BlockingIOError:
            pass
    finally:
        server.close()

    assert result.status == "ok", (result.status, result.stderr[-2000:])
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 3, lines
    for line in lines:
        target, outcome, ms = line.split()
        assert outcome.startswith("failed:"), f"connected to {target}: {line}"
        assert int(ms) < 500, f"connect to {target} did not fail at once: {line}"
