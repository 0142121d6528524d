"""Claim: a Go program reaches no network: TCP to a server on the host's loopback and to a
public address, and UDP to a receiver on the host's loopback and to a public resolver, all
fail at once, through the net package and through raw syscalls alike.

The test runs a real TCP listener and a real UDP receiver on random host loopback ports and
hands the ports to the program. "At once" matters: a connect that merely times out would
still be probing the network. Only the sandboxed program sends anything.
"""

from __future__ import annotations

import json
import os
import socket

import pytest

from assay import Limits
from assay.languages.go import GO

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

PROBE = r"""package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	var tcpPort, udpPort int
	fmt.Fscan(os.Stdin, &tcpPort, &udpPort)
	out := map[string][]interface{}{}
	attempt := func(name string, fn func() error) {
		start := time.Now()
		err := fn()
		took := time.Since(start).Seconds()
		if err == nil {
			out[name] = []interface{}{"reached", took}
		} else {
			out[name] = []interface{}{"failed", err.Error(), took}
		}
	}
	dial := func(network, addr string) func() error {
		return func() error {
			c, err := net.DialTimeout(network, addr, 3*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("escaped"))
			return err
		}
	}
	attempt("tcp_host_loopback", dial("tcp4", fmt.Sprintf("127.0.0.1:%d", tcpPort)))
	attempt("tcp_mapped_v6", dial("tcp", fmt.Sprintf("[::ffff:127.0.0.1]:%d", tcpPort)))
	attempt("tcp_external", dial("tcp4", "1.1.1.1:80"))
	attempt("tcp_external_v6", dial("tcp6", "[2606:4700:4700::1111]:53"))
	attempt("udp_host_loopback", dial("udp4", fmt.Sprintf("127.0.0.1:%d", udpPort)))
	attempt("udp_external", func() error {
		c, err := net.ListenPacket("udp4", ":0")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.WriteTo([]byte("escaped"), &net.UDPAddr{IP: net.IPv4(8, 8, 8, 8), Port: 53})
		return err
	})
	attempt("raw_syscall_tcp", func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		return syscall.Connect(fd, &syscall.SockaddrInet4{Port: tcpPort, Addr: [4]byte{127, 0, 0, 1}})
	})
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
}
"""


def test_go_has_no_network(runner) -> None:  # type: ignore[no-untyped-def]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.setblocking(False)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    ports = f"{server.getsockname()[1]} {receiver.getsockname()[1]}"
    try:
        result = runner.run(PROBE, "go", ports, Limits(time_s=5, wall_s=20))
        assert result.status == "ok", (result.status, result.stderr[-800:])
        outcomes = json.loads(result.stdout)
        assert len(outcomes) == 7, outcomes
        for name, outcome in outcomes.items():
            assert outcome[0] == "failed", f"{name} reached the network: {outcome}"
            assert outcome[-1] < 0.5, f"{name} did not fail at once: {outcome}"
        try:
            conn, peer = server.accept()
        except BlockingIOError:
            pass
        else:
            conn.close()
            raise AssertionError(f"the host's listener accepted a connection from {peer}")
        try:
            data, peer = receiver.recvfrom(65536)
        except BlockingIOError:
            pass
        else:
            raise AssertionError(f"the host received a datagram {data!r} from {peer}")
    finally:
        server.close()
        receiver.close()
