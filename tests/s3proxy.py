"""A real S3 server on loopback for tests: s3proxy (filesystem backend).

`make setup` resolves ``org.gaul:s3proxy:4.1.0:jar-with-dependencies`` into
``<venv>/share/waterline/s3proxy``; `S3Proxy.start` runs it on 127.0.0.1 and a
free port with a temp folder as its store, creates one bucket, and `stop`
ends it. ``tests/conftest.py`` has the session-scoped ``s3proxy`` fixture.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

VERSION = "4.1.0"
ACCESS_KEY = "waterline-test"
SECRET_KEY = "waterline-test-secret"


def jar_path() -> Path:
    jar = Path(sys.prefix) / "share" / "waterline" / "s3proxy" / f"s3proxy-{VERSION}-jar-with-dependencies.jar"
    if not jar.exists():
        raise FileNotFoundError(f"{jar} missing: run `make setup`")
    return jar


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class S3Proxy:
    """A running s3proxy: ``endpoint``, one ``bucket``, and the AWS env that reaches it."""

    endpoint: str
    bucket: str
    process: subprocess.Popen
    root: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def start(cls, root: Path, *, bucket: str = "waterline", timeout_s: float = 60.0) -> "S3Proxy":
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        conf = root / "s3proxy.conf"
        conf.write_text(
            "\n".join([
                f"s3proxy.endpoint={endpoint}",
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={ACCESS_KEY}",
                f"s3proxy.credential={SECRET_KEY}",
                "jclouds.provider=filesystem",
                f"jclouds.filesystem.basedir={root / 'data'}",
            ]) + "\n"
        )
        log = root / "s3proxy.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["java", "-Xmx256m", "-jar", str(jar_path()), "--properties", str(conf)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        env = {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": "us-east-1",
        }
        server = cls(endpoint=endpoint, bucket=bucket, process=process, root=root, log=log, env=env)
        try:
            server._wait(port, timeout_s)
            server.client().create_bucket(Bucket=bucket)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait(self, port: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"s3proxy exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"s3proxy did not listen on {port} within {timeout_s}s: {self.log.read_text()[-2000:]}")

    def client(self):
        """A boto3 S3 client for this server (path-style addressing)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1", config=Config(s3={"addressing_style": "path"}),
        )

    def uri(self, prefix: str) -> str:
        """``s3a://<bucket>/<prefix>``."""
        return f"s3a://{self.bucket}/{prefix.strip('/')}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def set_env(env: dict[str, str]) -> dict[str, str | None]:
    """Set ``env`` in os.environ; returns what to restore with `restore_env`."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    return saved


def restore_env(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
