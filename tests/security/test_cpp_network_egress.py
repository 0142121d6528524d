"""Claim: C++ programs reach no network: TCP/UDP to the host's loopback and to an external
address fail, and only AF_UNIX sockets can be created."""

from __future__ import annotations

import socket
import threading

PROBE = r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
static void tcp(const char* ip, int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) { std::printf("tcp %s socket-denied errno=%d\n", ip, errno); return; }
    sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    int r = connect(s, (sockaddr*)&a, sizeof a);
    std::printf("tcp %s %s\n", ip, r == 0 ? "CONNECTED" : "failed");
    close(s);
}
int main() {
    tcp("127.0.0.1", PORT);
    tcp("1.1.1.1", 80);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u >= 0) {
        sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(53);
        inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
        long n = sendto(u, "x", 1, 0, (sockaddr*)&a, sizeof a);
        std::printf("udp %s\n", n == 1 ? "SENT" : "failed");
    } else {
        std::printf("udp socket-denied\n");
    }
    int x = socket(AF_UNIX, SOCK_STREAM, 0);
    std::printf("unix %s\n", x >= 0 ? "ok" : "denied");
    return 0;
}
"""


def test_cpp_has_no_network(runner) -> None:  # type: ignore[no-untyped-def]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[object] = []
    server.settimeout(3)
    waiter = threading.Thread(target=lambda: _accept(server, accepted), daemon=True)
    waiter.start()
    port = server.getsockname()[1]
    result = runner.run(PROBE.replace("PORT", str(port)), "cpp")
    waiter.join(4)
    server.close()
    out = result.stdout.decode()
    assert result.status == "ok", (result.status, result.stderr[-300:])
    assert "CONNECTED" not in out and "SENT" not in out, out
    assert out.count("socket-denied") == 3, out
    assert "unix ok" in out
    assert accepted == [], "the host's listener got a connection from the sandbox"


def _accept(server: socket.socket, out: list[object]) -> None:
    try:
        out.append(server.accept())
    except OSError:
        pass
