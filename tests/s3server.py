"""A real S3 server for the tests: moto's standalone server (`moto[server]`, as s3fs tests itself),
a process of its own on 127.0.0.1 at a free port, with authentication on (a wrong key is refused
as by AWS), one IAM user whose key the tests use, and a bucket.

Use: `from tests.s3server import s3  # noqa: F401` in a test module, then the `s3` fixture (the
server, for the whole module) and `s3.environment()`: the standard AWS variables a process needs
(`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...), for `monkeypatch` or a subprocess's `env`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import pytest

from tests.infra.processes import free_port

REGION = "us-east-1"
# Requests the server answers without authentication: the three that make the tests' user.
SETUP_REQUESTS = 3


@dataclass
class S3Server:
    endpoint: str
    key: str
    secret: str
    process: subprocess.Popen

    def environment(self, **changes: str) -> dict[str, str]:
        """The AWS variables of the tests' user (the standard chain: no vase setting)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"} | changes

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret, region_name=REGION)

    def bucket(self) -> str:
        """A new empty bucket."""
        name = f"vase-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str) -> dict[str, str]:
        """Every object of a bucket, with its ETag (what changed, and what did not)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", ())}


def start_server() -> S3Server:
    import boto3

    port = free_port()
    env = os.environ | {"INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("moto's S3 server did not start") from None
            time.sleep(0.1)
    iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id="setup", aws_secret_access_key="setup",
                       region_name=REGION)
    iam.create_user(UserName="vase")
    key = iam.create_access_key(UserName="vase")["AccessKey"]
    iam.put_user_policy(UserName="vase", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    return S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"], process)


@pytest.fixture(scope="module")
def s3():
    server = start_server()
    try:
        yield server
    finally:
        server.process.terminate()
        server.process.wait(timeout=30)
