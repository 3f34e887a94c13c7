"""A fault-injecting HTTP proxy between waterline (boto3, deltalake, Spark's S3A) and s3proxy.

It forwards every request to the real S3 server unchanged, except those a
`Rule` matches (method and a regular expression over the path), which it
makes fail the way networks and stores fail:

* ``drop_response``: forward the request, let the store apply it, then close
  the client's connection without an answer (a response lost on the way back:
  the client retries a write that already landed);
* ``reset``: close the client's connection with a TCP reset before forwarding;
* ``status``: answer with an error status (503 SlowDown, 500 ...) and forward nothing;
* ``status_after``: forward the request (the store applies it), then answer with an
  error status instead of the store's answer;
* ``latency``: wait, then forward;
* ``strip_conditions``: apply a conditional PUT as if it had no ``If-None-Match`` or
  ``If-Match`` (a store that ignores conditional writes).

A rule applies to its first ``times`` matching requests and is then spent;
`Rule.hits` counts what it did, so a test can check its fault really
happened. The proxy is a process of its own (``python -m tests.faults.proxy``):
deltalake holds the GIL while it waits on the network, so a proxy in a thread
of the test process would never get to answer it. It listens on 127.0.0.1
only, opens one upstream connection per request, and takes its rules over
HTTP on the same port (``/_faults/rules``), which `FaultProxy` does for tests. HTTP/1.1 with keep-alive, ``Expect: 100-continue`` (answered by the
proxy itself) and chunked bodies are handled; nothing else is needed by the
clients in this suite.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import struct
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass, field
from urllib.parse import unquote

_ERROR_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
               b"<Message>fault injected by the test proxy</Message></Error>")


@dataclass
class Rule:
    """Fail the first ``times`` requests whose method is ``method`` (None: any) and whose path
    (with query) matches ``path`` (a regular expression, searched). Returned by `FaultProxy.add`,
    ``hits`` asks the proxy how many requests the rule has failed so far."""

    action: str  # drop_response | reset | status | status_after | latency | strip_conditions
    path: str
    method: str | None = "PUT"
    times: int = 1
    status: int = 503
    seconds: float = 0.0
    id: int | None = None
    _proxy: "FaultProxy | None" = field(default=None, repr=False, compare=False)

    @property
    def hits(self) -> int:
        if self._proxy is None:
            raise RuntimeError("a rule counts hits once added to a proxy")
        return self._proxy.hits()[self.id]

    def spec(self) -> dict:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_") and k != "id"}


class FaultProxy:
    """The test side: `start` the proxy process in front of ``upstream`` (host, port); its URL
    is ``endpoint``; `add` and `clear` its rules; `stop` ends it."""

    def __init__(self, upstream: tuple[str, int], credentials: tuple[str, str]) -> None:
        self.upstream, self.credentials = upstream, credentials
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.proxy", self.upstream[0], str(self.upstream[1]), *self.credentials],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the fault proxy did not start: {line!r}")
        self.port = int(line)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.endpoint + CONTROL + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read() or b"null")

    def add(self, *rules: Rule) -> list[Rule]:
        ids = self._call("POST", "rules", [r.spec() for r in rules])
        for rule, rule_id in zip(rules, ids):
            rule.id, rule._proxy = rule_id, self
        return list(rules)

    def clear(self) -> None:
        self._call("DELETE", "rules")

    def hits(self) -> dict[int, int]:
        return {int(k): v for k, v in self._call("GET", "hits").items()}

    def requests(self) -> list[list[str]]:
        """(method, path) of every request the proxy forwarded or failed, in order."""
        return self._call("GET", "requests")


CONTROL = "/_faults/"


class _Server:
    """The proxy process: forwards to ``upstream``, failing what its rules match."""

    def __init__(self, upstream: tuple[str, int], credentials: tuple[str, str]) -> None:
        self.upstream, self.credentials = upstream, credentials
        self.rules: dict[int, dict] = {}
        self.hits: dict[int, int] = {}
        self.log: list[tuple[str, str]] = []
        self._next = 0

    def _take(self, method: str, target: str) -> dict | None:
        self.log.append((method, target))
        for rule_id, rule in self.rules.items():
            if (self.hits[rule_id] < rule["times"] and rule["method"] in (None, method)
                    and re.search(rule["path"], target)):
                self.hits[rule_id] += 1
                return rule
        return None

    def _control(self, method: str, target: str, body: bytes) -> bytes:
        what = target[len(CONTROL):]
        if what == "rules" and method == "POST":
            ids = []
            for rule in json.loads(body):
                self._next += 1
                self.rules[self._next], self.hits[self._next] = rule, 0
                ids.append(self._next)
            out: object = ids
        elif what == "rules" and method == "DELETE":
            self.rules.clear()
            out = None
        elif what == "hits":
            out = self.hits
        elif what == "requests":
            out = self.log
        else:
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        payload = json.dumps(out).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + \
            str(len(payload)).encode() + b"\r\n\r\n" + payload

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await _read_head(reader)
                if head is None:
                    return
                request_line, headers = head
                method, target, _ = request_line.split(" ", 2)
                if _header(headers, "expect").lower() == "100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await writer.drain()
                    headers = [(k, v) for k, v in headers if k.lower() != "expect"]
                body = await _read_body(reader, headers, request=True)
                if target.startswith(CONTROL):
                    writer.write(self._control(method, target, body))
                    await writer.drain()
                    continue
                rule = self._take(method, target)
                action = rule["action"] if rule else None
                if action == "reset":
                    _reset(writer)
                    return
                if action == "status":
                    writer.write(_error_response(rule["status"]))
                    await writer.drain()
                    continue
                if action == "latency":
                    await asyncio.sleep(rule["seconds"])
                if action == "strip_conditions" and _header(headers, "if-none-match") + _header(headers, "if-match"):
                    response = await asyncio.to_thread(self._unconditional_put, target, body)
                else:
                    response = await self._forward(request_line, headers, body, head_only=method == "HEAD")
                if action == "drop_response":  # the store applied it; the client never hears
                    _reset(writer)
                    return
                if action == "status_after":  # the store applied it; the client hears an error
                    response = _error_response(rule["status"])
                writer.write(response)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if not writer.is_closing():
                writer.close()

    async def _forward(self, request_line: str, headers: list[tuple[str, str]], body: bytes, *,
                       head_only: bool) -> bytes:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream, limit=2 ** 20)
        try:
            lines = [request_line] + [f"{k}: {v}" for k, v in headers if k.lower() != "connection"]
            lines.append("Connection: close")
            up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            await up_writer.drain()
            head = await _read_head(up_reader)
            if head is None:
                raise ConnectionError("upstream closed")
            status_line, response_headers = head
            status = int(status_line.split(" ", 2)[1])
            no_body = head_only or status in (204, 304) or 100 <= status < 200
            response_body = b"" if no_body else await _read_body(up_reader, response_headers, request=False)
            out = [status_line] + [f"{k}: {v}" for k, v in response_headers if k.lower() != "connection"]
            if not no_body and not _header(response_headers, "content-length") \
                    and "chunked" not in _header(response_headers, "transfer-encoding").lower():
                out.append(f"Content-Length: {len(response_body)}")  # it ended with the upstream connection
            return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + response_body
        finally:
            up_writer.close()

    def _unconditional_put(self, target: str, body: bytes) -> bytes:
        """The PUT as a store that ignores conditions applies it. The condition header is
        signed by the client, so the proxy makes the write itself with the store's keys."""
        import boto3
        from botocore.config import Config

        bucket, _, key = target.split("?", 1)[0].lstrip("/").partition("/")
        client = boto3.client("s3", endpoint_url=f"http://{self.upstream[0]}:{self.upstream[1]}",
                              aws_access_key_id=self.credentials[0], aws_secret_access_key=self.credentials[1],
                              region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
        etag = client.put_object(Bucket=bucket, Key=unquote(key), Body=body)["ETag"]
        return f"HTTP/1.1 200 OK\r\nETag: {etag}\r\nContent-Length: 0\r\n\r\n".encode()


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, list[tuple[str, str]]] | None:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = raw.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return lines[0], headers


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


async def _read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]], *, request: bool) -> bytes:
    """The message body as sent (chunked bodies stay chunked, trailers included)."""
    if "chunked" in _header(headers, "transfer-encoding").lower():
        out = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            out += size_line
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await reader.readuntil(b"\r\n")
                    out += line
                    if line == b"\r\n":
                        return bytes(out)
            out += await reader.readexactly(size + 2)
    length = _header(headers, "content-length")
    if length:
        return await reader.readexactly(int(length))
    if request:
        return b""
    return await reader.read()  # a response delimited by the connection's end


def _error_response(status: int) -> bytes:
    reason = {500: "Internal Server Error", 503: "Slow Down"}.get(status, "Error")
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
            f"Content-Length: {len(_ERROR_BODY)}\r\n\r\n").encode() + _ERROR_BODY


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to the client."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def _main(upstream: tuple[str, int], credentials: tuple[str, str]) -> None:
    server = _Server(upstream, credentials)
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0, limit=2 ** 20)
    print(listening.sockets[0].getsockname()[1], flush=True)
    async with listening:
        await listening.serve_forever()


if __name__ == "__main__":
    host, port, access, secret = sys.argv[1:5]
    asyncio.run(_main((host, int(port)), (access, secret)))
