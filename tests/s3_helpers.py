"""A real S3 API server on loopback for the tests: moto's ThreadedMotoServer.

Why moto: it is a pip package (no binary download, no Docker, no service to install), it
speaks the S3 REST protocol over HTTP so s3fs/aiobotocore talk to it exactly as to AWS, it runs
in-process on a port we choose (so a test can stop it to take "the endpoint" down and start it
again on the same address), and it can check request signatures against IAM users it holds, so
the credentials the client picked up from the environment are really verified.

The server requires signed requests from one IAM user whose key :meth:`S3Server.env` hands out
as ``AWS_*`` variables; a request signed with another key is refused (403).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

moto_server = pytest.importorskip(
    "moto.server", reason="moto[server] is not installed (pip install 'moto[server]')"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_ALLOW_S3 = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
)


class S3Server:
    """Start, stop (the endpoint is down) and restart an S3 server on one loopback port.

    Buckets and objects live in moto's in-process backends, so they survive a stop/start.
    """

    def __init__(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server: moto_server.ThreadedMotoServer | None = None
        self.key_id = ""
        self.secret = ""

    def start(self) -> None:
        server = moto_server.ThreadedMotoServer(
            ip_address="127.0.0.1", port=self.port, verbose=False
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                server.start()
                break
            except OSError:  # the port of a just-stopped server may linger briefly
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._server = server
        if not self.key_id:
            self._create_user()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def env(self) -> dict[str, str]:
        """The variables a client (and a child process) needs: endpoint, region, the key."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": "us-east-1",
            # Never read a developer's own ~/.aws files in a test.
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def _create_user(self) -> None:
        import boto3

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
        )
        iam.create_user(UserName="assay-records")
        iam.put_user_policy(UserName="assay-records", PolicyName="s3", PolicyDocument=_ALLOW_S3)
        key = iam.create_access_key(UserName="assay-records")["AccessKey"]
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.require_auth(True)

    def require_auth(self, on: bool) -> None:
        """From now on, refuse requests not signed by a known key (``on``), or accept all."""
        req = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth",
            data=b"0" if on else b"inf",
            method="POST",
            headers={"content-type": "text/plain"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()


@contextmanager
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    try:
        yield server
    finally:
        if not server.running:
            server.start()
        server.require_auth(False)  # moto's switch is process-wide: leave it as found
        server.stop()


def clear_s3fs_cache() -> None:
    """Forget cached s3fs instances (and their clients, which hold the credentials)."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
