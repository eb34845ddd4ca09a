"""What DisAuto and a master say to each other, recorded on the wire and parsed strictly against
Mesos' own ``.proto`` files.

:class:`Tap` is a TCP proxy on loopback put between ``da-submit`` and the master
(``--master`` is the tap's address): it forwards every byte both ways and keeps them, one pair
of files per connection. :func:`exchanges` reads them back as HTTP requests and answers
(chunked bodies joined), and :func:`check_exchanges` parses every message of Mesos' v1 APIs in
them with protobuf's JSON parser, unknown fields refused:

- the scheduler API (``/api/v1/scheduler``): every ``Call`` DisAuto sends, and every ``Event``
  of the subscription's RecordIO stream;
- the operator API (``/api/v1``): every ``Call`` and its ``Response``.

The messages are those of the ``.proto`` files under ``include/`` (``mesos/v1/...``), compiled
here with grpcio-tools: a real Mesos' install (``$MESOS_HOME/include``) or its source tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import importlib
import json
from pathlib import Path
import socket
import sys
import threading
from typing import Any


@dataclass
class Message:
    """One HTTP request or answer: its first line, headers (lower-case names) and body."""

    start: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Exchange:
    """A request and the answer to it (None: the connection closed first)."""

    request: Message
    answer: Message | None


class Tap:
    """A recording TCP proxy from a free loopback port to ``upstream`` (``host:port``)."""

    def __init__(self, upstream: str, folder: Path) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._count = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stopped = False
        threading.Thread(target=self._accept, name="tap", daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._count += 1
                name = f"{self._count:04d}"
                self._open += [client, upstream]
            for source, target, suffix in ((client, upstream, "request"),
                                           (upstream, client, "answer")):
                threading.Thread(target=self._pump, args=(
                    source, target, self.folder / f"{name}.{suffix}"), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket, record: Path) -> None:
        with record.open("ab") as kept:
            while True:
                try:
                    data = source.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    try:
                        target.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                kept.write(data)
                kept.flush()
                try:
                    target.sendall(data)
                except OSError:
                    return

    def stop(self) -> None:
        self._stopped = True
        self._server.close()
        with self._lock:
            for sock in self._open:
                try:
                    sock.close()
                except OSError:
                    pass


def _messages(data: bytes) -> list[Message]:
    """The HTTP messages one direction of a connection carried (the last one possibly cut)."""
    found = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body, rest = _unchunk(rest)
        else:
            length = int(headers.get("content-length", "0") or 0)
            body, rest = rest[:length], rest[length:]
        found.append(Message(lines[0], headers, body))
        data = rest
    return found


def _unchunk(data: bytes) -> tuple[bytes, bytes]:
    """A chunked body joined, and what follows it (a stream cut short: what came of it)."""
    body = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            return bytes(body), b""
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            return bytes(body), rest.partition(b"\r\n")[2]
        body += rest[:size]
        data = rest[size + 2:]
        if len(rest) < size:
            return bytes(body), b""


def exchanges(folder: Path) -> list[Exchange]:
    """Every request recorded in ``folder`` and its answer, connection by connection."""
    found = []
    for request_file in sorted(folder.glob("*.request")):
        requests = _messages(request_file.read_bytes())
        answer_file = request_file.with_suffix(".answer")
        answers = _messages(answer_file.read_bytes()) if answer_file.exists() else []
        for index, request in enumerate(requests):
            found.append(Exchange(request, answers[index] if index < len(answers) else None))
    return found


def records(body: bytes) -> list[bytes]:
    """The messages of a RecordIO stream (``<length>\\n<message>``...)."""
    found = []
    while body:
        length, sep, rest = body.partition(b"\n")
        if not sep or not length.strip().isdigit():
            break
        size = int(length)
        if len(rest) < size:
            break  # cut short when the connection closed
        found.append(rest[:size])
        body = rest[size:]
    return found


@dataclass
class Protos:
    """Mesos' v1 messages compiled from the ``.proto`` files under ``include``."""

    include: Path
    out: Path
    modules: dict[str, Any] = field(default_factory=dict)

    def compile(self) -> None:
        import grpc_tools
        from grpc_tools import protoc

        self.out.mkdir(parents=True, exist_ok=True)
        sources = [str(p.relative_to(self.include))
                   for p in sorted((self.include / "mesos" / "v1").rglob("*.proto"))]
        bundled = Path(grpc_tools.__file__).parent / "_proto"
        status = protoc.main(["protoc", f"-I{self.include}", f"-I{bundled}",
                              f"--python_out={self.out}", *sources])
        if status != 0:
            raise RuntimeError(f"protoc could not compile Mesos' protos under {self.include}")
        sys.path.insert(0, str(self.out))
        for name in ("scheduler/scheduler_pb2", "master/master_pb2"):
            module = "mesos.v1." + name.replace("/", ".")
            self.modules[name.split("/")[0]] = importlib.import_module(module)

    def parse(self, api: str, message: str, text: bytes) -> str:
        """"" when ``text`` parses strictly as ``mesos.v1.<api>.<message>``, else why not."""
        from google.protobuf import json_format

        target = getattr(self.modules[api], message)()
        try:
            json_format.Parse(text, target, ignore_unknown_fields=False)
        except json_format.ParseError as err:
            return str(err)
        return ""


def check_exchanges(protos: Protos | None,
                    found: list[Exchange]) -> tuple[dict[str, int], list[str]]:
    """Check every v1 message of ``found``: (how many of each kind, the problems).

    Each one is checked by the project's own shape checkers (the scheduler events by
    ``tests.localmesos.cluster_support.check_event``, the operator API's answers by
    ``tests.localmesos.operator_shapes``: what the embedded cluster's tests hold it to), and,
    with ``protos``, parsed strictly as the message Mesos' ``.proto`` files declare."""
    from tests.localmesos import operator_shapes
    from tests.localmesos.cluster_support import check_event

    counts: dict[str, int] = {}
    problems: list[str] = []
    calls = " ".join(exchange.request.body.decode("utf-8", "replace") for exchange in found
                     if exchange.request.start.startswith("POST /api/v1/scheduler"))
    multi_role, refined = "MULTI_ROLE" in calls, "RESERVATION_REFINEMENT" in calls

    def check(api: str, message: str, text: bytes, where: str) -> None:
        kind = f"{api}.{message}"
        try:
            value = json.loads(text)
        except ValueError:
            problems.append(f"{where}: {kind} is not JSON: {text[:200]!r}")
            return
        label = str(value.get("type", "?")) if isinstance(value, dict) else "?"
        counts[f"{kind} {label}"] = counts.get(f"{kind} {label}", 0) + 1
        if kind == "scheduler.Event":
            problems.extend(f"{where}: {why}" for why in check_event(value, multi_role, refined))
        elif kind == "master.Response":
            problems.extend(operator_shapes.check("Response", value, f"{where}: Response"))
        why = protos.parse(api, message, text) if protos is not None else ""
        if why:
            problems.append(f"{where}: {kind} {label} (Mesos' protos): {why}")

    for exchange in found:
        method, path, *_ = exchange.request.start.split(" ")
        path = path.split("?")[0]
        json_body = "json" in exchange.request.headers.get("content-type", "")
        if method != "POST" or not json_body:
            continue
        answer = exchange.answer
        if path == "/api/v1/scheduler":
            check("scheduler", "Call", exchange.request.body, path)
            if answer is not None and answer.start.split(" ")[1] == "200" \
                    and "json" in answer.headers.get("content-type", ""):
                for record in records(answer.body):
                    check("scheduler", "Event", record, "the subscription")
        elif path == "/api/v1":
            check("master", "Call", exchange.request.body, path)
            if answer is not None and answer.body and answer.start.split(" ")[1] == "200":
                check("master", "Response", answer.body, path)
    return counts, problems
