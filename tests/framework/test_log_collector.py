"""The job folder's copy of each task's output stays within its cap, keeping the tail."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import Message
import json
from pathlib import Path
import threading
import time
from typing import Any
from urllib.error import HTTPError
from urllib.parse import parse_qs
from urllib.parse import urlparse

import pytest

from disauto.common import slots
from disauto.framework._log_collector import LogCollector
from disauto.framework._sandbox_logs import SandboxLogs
from tests.framework.test_sandbox_logs import FRAMEWORK
from tests.framework.test_sandbox_logs import FakeAgent as HttpAgent
from tests.framework.test_sandbox_logs import offer_from
from tests.framework.test_sandbox_logs import serving


class FakeAgent:
    """Serves a sandbox folder as the agent's ``/files/browse`` and ``/files/read`` do (offset
    -1: the size; a missing file: 404)."""

    def __init__(self, sandbox: Path) -> None:
        self.sandbox = sandbox

    def executors(self, agent_id: str, framework_id: str) -> dict[str, tuple[str, str]]:
        """The one task's executor and a warm slot's, both with this sandbox."""
        return {name: ("http://agent", str(self.sandbox)) for name in ("trial-0001", "job-slot-0")}

    def get_json(self, url: str) -> Any:
        query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
        if urlparse(url).path.endswith("/files/browse"):  # a folder's listing, as Mesos gives it
            folder = Path(query["path"])
            return [{"path": f"{query['path']}/{entry.name}", "size": entry.stat().st_size}
                    for entry in sorted(folder.iterdir()) if entry.is_file()]
        if not Path(query["path"]).exists():  # as an agent answers a file it does not have
            raise HTTPError(url, 404, "Not Found", Message(), None)
        data = Path(query["path"]).read_bytes()
        offset = int(query["offset"])
        if offset == -1:
            return {"offset": len(data), "data": ""}
        length = int(query.get("length", len(data)))
        # As the embedded agent answers: a read that cuts a UTF-8 character replaces it.
        return {"offset": offset,
                "data": data[offset:offset + length].decode("utf-8", "replace")}


def _collector(tmp_path: Path, **kwargs: Any) -> tuple[LogCollector, Path]:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "stderr").write_bytes(b"")
    agent = FakeAgent(sandbox)
    logs: Any = SandboxLogs()
    logs.executor_sandboxes = agent.executors
    logs.get_json = agent.get_json
    collector = LogCollector(logs, lambda: "F-1", lambda: [("trial-0001", "S1", True)],
                             tmp_path / "logs", **kwargs)
    collector.folder.mkdir()
    return collector, sandbox


def test_a_warm_slot_task_is_read_from_its_folder_in_the_slot_sandbox(tmp_path: Path) -> None:
    collector, sandbox = _collector(tmp_path, slot_of=lambda task_id: "job-slot-0")
    (sandbox / "stdout").write_bytes(b"the slot executor's own log\n")
    own = sandbox / slots.task_sandbox("trial-0001")
    own.mkdir(parents=True)
    (own / "stdout").write_bytes(b"the trial's output\n")
    (own / "stderr").write_bytes(b"")
    collector.poll()
    assert collector.path("trial-0001", "stdout").read_bytes() == b"the trial's output\n"


def _lines(start: int, stop: int) -> bytes:
    return b"".join(f"line {n:07d}\n".encode() for n in range(start, stop))


def test_a_flood_keeps_only_the_tail_with_a_header(tmp_path: Path) -> None:
    collector, sandbox = _collector(tmp_path, max_task_log_bytes=64 * 1024,
                                    max_poll_bytes=1 << 30)
    written = b""
    for chunk in range(20):  # 20 polls of ~12 KiB each: 240 KiB printed
        more = _lines(chunk * 1000, chunk * 1000 + 1000)
        written += more
        (sandbox / "stdout").write_bytes(written)
        collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    header, _, body = copy.partition(b"\n")
    assert len(body) <= 64 * 1024 and written.endswith(body) and body.startswith(b"line ")
    removed = len(written) - len(body)
    assert header.decode() == (
        f"[disauto: the first {removed} bytes of this copy were removed: the job folder keeps "
        "the last 65536 bytes of each stream; the agent's sandbox may hold more]")
    assert body.endswith(b"line 0019999\n")


def test_one_huge_poll_reads_only_the_tail(tmp_path: Path) -> None:
    collector, sandbox = _collector(tmp_path, max_task_log_bytes=8192)
    written = _lines(0, 100_000)  # 1.3 MB at once
    (sandbox / "stdout").write_bytes(written)
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert len(copy) <= 8192
    assert copy.endswith(b"line 0099999\n")
    assert f"[disauto: {len(written) - 8192 + 512} bytes skipped]".encode() in copy


def test_a_rotated_sandbox_file_is_followed_from_its_new_start(tmp_path: Path) -> None:
    collector, sandbox = _collector(tmp_path)
    (sandbox / "stdout").write_bytes(_lines(0, 100))
    collector.poll()
    (sandbox / "stdout").write_bytes(_lines(500, 510))  # rotated: smaller than before
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert copy.startswith(_lines(0, 100))
    assert b"[disauto: the sandbox's stdout was rotated" in copy
    assert copy.endswith(_lines(500, 510))


def test_the_tail_of_a_rotated_file_is_copied_too(tmp_path: Path) -> None:
    """A task that filled its sandbox file and rotated it before the first poll: the copy
    starts in ``stdout.1``; a rotation between polls brings what ``stdout.1`` got since."""
    collector, sandbox = _collector(tmp_path, max_task_log_bytes=4096)
    (sandbox / "stdout.1").write_bytes(_lines(0, 1000))
    (sandbox / "stdout").write_bytes(b"the last line\n")
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert copy.endswith(_lines(990, 1000) + b"the last line\n") and len(copy) <= 4096 + 200
    (sandbox / "stdout.1").write_bytes(b"the last line\n" + _lines(1000, 1010))
    (sandbox / "stdout").write_bytes(b"after\n")
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert copy.endswith(b"the last line\n" + _lines(1000, 1010) + b"\n[disauto: the "
                         b"sandbox's stdout was rotated; output written around the rotation "
                         b"may be missing here]\nafter\n")


_ROTATED = (b"\n[disauto: the sandbox's stdout was rotated; output written around the "
            b"rotation may be missing here]\n")


def test_a_file_rotated_before_anything_of_it_was_copied_is_read_from_stdout_1(
        tmp_path: Path) -> None:
    """A trial that floods: the poll that found its ``stdout`` empty, then the next one finds
    it rotated (``stdout.1`` now there) with only the last line left (make test once copied
    just that line)."""
    collector, sandbox = _collector(tmp_path, max_task_log_bytes=4096)
    (sandbox / "stdout").write_bytes(b"")
    collector.poll()
    (sandbox / "stdout.1").write_bytes(_lines(0, 1000))
    (sandbox / "stdout").write_bytes(b"THE LAST LINE\n")
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert copy.endswith(_lines(990, 1000) + _ROTATED + b"THE LAST LINE\n"), copy[-300:]


def test_a_file_rotated_and_grown_past_the_copy_is_told_by_its_last_bytes(
        tmp_path: Path) -> None:
    """Rotated, and the new file already longer than what was copied of the old one: its
    size alone does not tell; the bytes before the copy's offset do."""
    collector, sandbox = _collector(tmp_path)
    (sandbox / "stdout").write_bytes(_lines(0, 100))
    collector.poll()
    (sandbox / "stdout.1").write_bytes(_lines(0, 150))  # the old file, with what came after
    (sandbox / "stdout").write_bytes(_lines(500, 700))
    collector.poll()
    assert collector.path("trial-0001", "stdout").read_bytes() == (
        _lines(0, 150) + _ROTATED + _lines(500, 700))


def test_a_growing_file_of_wide_characters_is_not_taken_for_a_rotated_one(
        tmp_path: Path) -> None:
    """The bytes before the offset are read again from a point that may cut a UTF-8
    character, which the agent then answers replaced: only the last ones are compared."""
    collector, sandbox = _collector(tmp_path)
    bar = "\u2588" * 50 + "\n"  # a progress bar: 3 bytes a character
    (sandbox / "stdout").write_text(bar * 3)
    collector.poll()
    (sandbox / "stdout").write_text(bar * 5)
    collector.poll()
    (sandbox / "stdout").write_text(bar * 9)
    collector.poll()
    assert collector.path("trial-0001", "stdout").read_text() == bar * 9


def test_a_rotated_file_the_agent_could_not_serve_is_read_on_the_next_poll(
        tmp_path: Path) -> None:
    collector, sandbox = _collector(tmp_path, max_task_log_bytes=64 * 1024)
    (sandbox / "stdout.1").write_bytes(_lines(0, 5000))  # rotated before the first poll
    (sandbox / "stdout").write_bytes(b"THE LAST LINE\n")
    agent_get = collector._logs.get_json
    failures = []

    def busy_once(url: str) -> dict[str, Any]:
        if "stdout.1" in url and not failures:
            failures.append(url)
            raise HTTPError(url, 503, "Service Unavailable", Message(), None)
        return agent_get(url)

    collector._logs.get_json = busy_once
    collector.poll()
    collector.poll()
    copy = collector.path("trial-0001", "stdout").read_bytes()
    assert failures and copy.endswith(_lines(4990, 5000) + b"THE LAST LINE\n")


def test_a_resumed_framework_carries_each_copy_on_where_its_predecessor_stopped(
        tmp_path: Path) -> None:
    first, sandbox = _collector(tmp_path)
    (sandbox / "stdout").write_bytes(b"before the framework died\n")
    first.poll()  # then the framework is killed: no stop(), no last poll
    (sandbox / "stdout").write_bytes(b"before the framework died\nafter the resume\n")
    second = LogCollector(first._logs, lambda: "F-1",  # noqa: SLF001 - the same agent
                          lambda: [("trial-0001", "S1", False)], first.folder)
    second.poll()
    assert second.path("trial-0001", "stdout").read_bytes() == (
        b"before the framework died\nafter the resume\n")


def test_what_a_dying_framework_appended_after_its_last_record_is_not_copied_twice(
        tmp_path: Path) -> None:
    first, sandbox = _collector(tmp_path)
    (sandbox / "stdout").write_bytes(b"one\n")
    first.poll()  # recorded: offset 4, copy length 4
    (sandbox / "stdout").write_bytes(b"one\ntwo\n")
    copy = first.path("trial-0001", "stdout")
    with copy.open("ab") as out:  # the dying framework appended "two" but recorded nothing
        out.write(b"two\n")
    second = LogCollector(first._logs, lambda: "F-1",  # noqa: SLF001 - the same agent
                          lambda: [("trial-0001", "S1", False)], first.folder)
    second.poll()
    assert copy.read_bytes() == b"one\ntwo\n"


def test_a_copy_a_dying_framework_never_recorded_is_copied_again_not_appended_to(
        tmp_path: Path) -> None:
    """Killed after its first copy of a task's output and before its first record of it: the
    copy holds what no record says it holds, and the resumed framework's first copy replaces
    it (a resume in make test found the trial's first line twice)."""
    first, sandbox = _collector(tmp_path)
    (sandbox / "stdout").write_bytes(b"trial 3 starts\n")
    copy = first.path("trial-0001", "stdout")
    copy.write_bytes(b"trial 3 starts\n")  # appended; the framework died before recording it
    (sandbox / "stdout").write_bytes(b"trial 3 starts\ntrial 3 ends\n")
    second = LogCollector(first._logs, lambda: "F-1",  # noqa: SLF001 - the same agent
                          lambda: [("trial-0001", "S1", False)], first.folder)
    second.poll()
    assert copy.read_bytes() == b"trial 3 starts\ntrial 3 ends\n"


@pytest.fixture
def http_agent(tmp_path: Path) -> Iterator[HttpAgent]:
    """An agent's ``/state`` and ``/files/read`` over HTTP, recording the requests."""
    with serving(tmp_path / "agent") as server:
        yield server


@pytest.mark.integration
def test_an_agents_state_is_read_once_per_poll_and_an_unlisted_ended_task_is_done(
        http_agent: HttpAgent, tmp_path: Path) -> None:
    """On a cluster many jobs share, an agent's ``/state`` lists every framework's executors:
    one read per poll serves every task on it, and a task that ended without a sandbox there
    (it never started) is not looked for again, at the next polls or the last one."""
    for number in range(1, 6):
        http_agent.sandbox(f"trial-{number:04d}", f"stderr of {number}\n")
    tasks = [(f"trial-{number:04d}", "S1", number == 5) for number in range(1, 7)]
    logs = SandboxLogs()
    logs.remember([offer_from("S1", http_agent.port)])
    collector = LogCollector(logs, lambda: FRAMEWORK, lambda: tasks, tmp_path / "logs")
    collector.folder.mkdir()
    collector.poll()
    states = [r for r in http_agent.requests if r.endswith("/state")]
    assert len(states) == 1
    for number in range(1, 6):
        assert collector.path(f"trial-{number:04d}", "stderr").read_text() == \
            f"stderr of {number}\n"
    assert not collector.path("trial-0006", "stdout").exists()  # never started: no copy
    http_agent.requests.clear()
    collector.poll()
    collector.stop()  # the last poll: only the live task's files, no /state
    assert [r for r in http_agent.requests if r.endswith("/state")] == []
    # Only the live task's folder, one listing per poll: nothing grew, so nothing is read.
    assert len(http_agent.requests) == 2
    assert all(r.startswith("/files/browse") and "trial-0005" in r
               for r in http_agent.requests)


@pytest.mark.integration
def test_a_complete_copy_is_recorded_as_done_and_never_asked_for_again(
        http_agent: HttpAgent, tmp_path: Path) -> None:
    """A task that ended and whose output is copied goes to ``logs/.done`` and out of
    ``.offsets.json``: neither this collector nor a resumed framework's asks its agent for it
    again, so a poll costs the running tasks, not every task the job ran (issue 29)."""
    for number in (1, 2):
        http_agent.sandbox(f"trial-{number:04d}", f"stderr of {number}\n")
    tasks = [("trial-0001", "S1", False), ("trial-0002", "S1", True)]
    logs = SandboxLogs()
    logs.remember([offer_from("S1", http_agent.port)])
    collector = LogCollector(logs, lambda: FRAMEWORK, lambda: tasks, tmp_path / "logs")
    collector.folder.mkdir()
    collector.poll()
    done = (collector.folder / ".done").read_text().splitlines()
    assert sorted(line.split("\t")[:2] for line in done) == [
        ["trial-0001", "stderr"], ["trial-0001", "stdout"]]
    offsets = json.loads((collector.folder / ".offsets.json").read_text())
    assert sorted(offsets) == ["trial-0002\tstderr", "trial-0002\tstdout"]
    http_agent.requests.clear()
    collector.poll()
    assert http_agent.requests and all("trial-0001" not in r for r in http_agent.requests)
    resumed = LogCollector(logs, lambda: FRAMEWORK, lambda: tasks, collector.folder)
    http_agent.requests.clear()
    resumed.poll()
    assert http_agent.requests and all("trial-0001" not in r for r in http_agent.requests)
    assert collector.path("trial-0001", "stderr").read_text() == "stderr of 1\n"


def test_a_job_left_interrupted_stops_copying_at_once_when_its_agent_hangs(
        tmp_path: Path) -> None:
    """A frozen agent holds each request for its whole timeout: stopping without the last copy
    waits for neither the poll under way nor another one."""
    collector, sandbox = _collector(tmp_path, interval=0.01)
    (sandbox / "stdout").write_bytes(b"before the freeze\n")
    hung, release = threading.Event(), threading.Event()
    answer = collector._logs.get_json  # noqa: SLF001 - the fake agent's

    def frozen(url: str) -> Any:
        hung.set()
        release.wait(30)
        return answer(url)

    collector._logs.get_json = frozen  # noqa: SLF001 - the agent freezes
    collector.start()
    assert hung.wait(10)
    started = time.monotonic()
    collector.stop(last_copy=False)
    assert time.monotonic() - started < 1.0
    release.set()
