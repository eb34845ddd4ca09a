"""``da-cluster``: flags, one-line errors, and a real run stopped by a signal."""

from __future__ import annotations

from collections.abc import Iterator
import http.client
import json
from pathlib import Path
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from disauto.localmesos.cli import UsageError
from disauto.localmesos.cli import load_credentials
from disauto.localmesos.cli import main
from disauto.localmesos.cli import parse_attributes
from disauto.localmesos.cli import parse_duration


pytestmark = pytest.mark.integration  # starts processes or servers


def _run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--port", "99999"], "--port"),
        (["--port", "x"], "--port"),
        (["--agents", "-1"], "--agents"),
        (["--agents-only"], "--agents-only"),
        (["--agents-only", "--master", "nowhere"], "--master"),
        (["--master", "127.0.0.1:5050"], "--master"),
        (["--agents-only", "--master", "127.0.0.1:5050", "--agents", "0"], "--agents"),
        (["--cpus", "-2"], "--cpus"),
        (["--cpus", "nan"], "--cpus"),
        (["--mem", "lots"], "--mem"),
        (["--mem", "0GB"], "--mem"),
        (["--disk", "5XB"], "--disk"),
        (["--gpus", "1.5"], "--gpus"),
        (["--ports", "[32000-31000]"], "--ports"),
        (["--ports", "[1-70000]"], "--ports"),
        (["--attributes", "rack"], "--attributes"),
        (["--agent-attributes", "class"], "--agent-attributes"),
        (["--agents", "1", "--agent-attributes", "a:1", "--agent-attributes", "a:2"],
         "--agent-attributes"),
        (["--allocation-interval", "fast"], "--allocation-interval"),
        (["--allocation-interval", "0s"], "--allocation-interval"),
        (["--heartbeat-interval", "-1s"], "--heartbeat-interval"),
        (["--executor-heartbeat-interval", "0s"], "--executor-heartbeat-interval"),
        (["--credentials", "/does/not/exist"], "--credentials"),
        (["--resources", "cpus(ml:4"], "--resources"),
        (["--resources", "ports:[1-70000]"], "--resources"),
        (["--gpus", "0", "--resources", "gpus:1.5"], "--resources"),
        (["--agent-resources", "cpus:x"], "--agent-resources"),
        (["--agents", "1", "--agent-resources", "cpus:1", "--agent-resources", "cpus:2"],
         "--agent-resources"),
        (["--agent-hostname", "a b"], "--agent-hostname"),
        (["--agent-ping-timeout", "0s"], "--agent-ping-timeout"),
        (["--max-agent-ping-timeouts", "0"], "--max-agent-ping-timeouts"),
        (["--agent-reregister-timeout", "soon"], "--agent-reregister-timeout"),
        (["--bogus"], "--bogus"),
        (["--authenticate-http-readonly"], "--authenticate-http-readonly"),
        (["--jwt-secret-key", "/nonexistent"], "--jwt-secret-key"),
        (["--acls", "/nonexistent"], "--acls"),
        (["--http-credentials", "/nonexistent"], "--http-credentials"),
        (["--port"], "--port"),
    ],
)
def test_bad_flags_are_one_line_errors_with_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code, err = _run_main(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("da-cluster: error: ")
    assert flag in lines[0] and "Traceback" not in err


def test_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--port", "--agents", "--agents-only", "--cpus", "--mem", "--disk", "--gpus",
                 "--ports", "--attributes", "--allocation-interval", "--heartbeat-interval",
                 "--work-dir", "--credentials"):
        assert flag in out
    # Fits 80 columns, its flags grouped by concern, each group's flags in it, defaults said.
    assert max(len(line) for line in out.splitlines()) <= 80, out
    groups = [line for line in out.splitlines() if line and not line[0].isspace()
              and line.endswith(":")]
    assert groups == ["options:", "cluster:", "agents:", "reservations and per-agent settings:",
                      "isolation:", "sandbox logs:", "agent health and recovery (Mesos' flags):",
                      "authentication and authorization (Mesos' flags):",
                      "masters elected through ZooKeeper:", "output:",
                      "admin (not Mesos calls; docs/local-mode.md):"]
    said = " ".join(out.split())
    assert "--port N the master's port; 0 picks a free one (default 5050;" in said
    assert "--master HOST:PORT with --agents-only: the address of the master" in said
    assert "isolation: --isolation ISOLATORS" in said
    assert "da-cluster agent partition AGENT --master HOST:PORT [--for DURATION]" in said
    entries = re.split(r"\n  (?=-)", out)  # one per flag, with its wrapped help
    for flag in ("--agents", "--allocation-interval", "--gpus", "--ports", "--isolation",
                 "--max-stdout-size", "--agent-ping-timeout", "--max-agent-ping-timeouts"):
        (entry,) = [e for e in entries if e.startswith(f"{flag} ")]
        assert "default" in entry, (flag, entry)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1", 1.0), ("1s", 1.0), ("500ms", 0.5), ("1secs", 1.0), ("1.5mins", 90.0),
     ("2m", 120.0), ("1hrs", 3600.0), ("250us", 0.00025), (".5s", 0.5)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, flag="--x") == pytest.approx(seconds)


def test_heartbeat_intervals_default_to_mesos_constants_and_may_be_shorter() -> None:
    from disauto.localmesos.cli import build_parser
    from disauto.localmesos.cli import config_from_args

    config = config_from_args(build_parser().parse_args(["--gpus", "0"]))
    assert (config.heartbeat_interval, config.executor_heartbeat_interval) == (15.0, 1800.0)
    config = config_from_args(build_parser().parse_args([
        "--gpus", "0", "--heartbeat-interval", "1s", "--executor-heartbeat-interval", "500ms"]))
    assert (config.heartbeat_interval, config.executor_heartbeat_interval) == (1.0, 0.5)


def test_agent_attributes_extend_each_agents_own_in_order() -> None:
    from disauto.localmesos.cli import build_parser
    from disauto.localmesos.cli import config_from_args

    args = build_parser().parse_args([
        "--agents", "3", "--cpus", "2", "--mem", "1GB", "--gpus", "0", "--attributes", "rack:r1",
        "--agent-attributes", "class:fast", "--agent-attributes", "class:edge;slowdown:2"])
    agents = config_from_args(args).agent_list()
    assert [dict(a.attributes) for a in agents] == [
        {"rack": "r1", "class": "fast"}, {"rack": "r1", "class": "edge", "slowdown": 2.0},
        {"rack": "r1"}]
    assert len({a.ports for a in agents}) == 3  # the shared range is still split between them


def test_resources_reservations_hostnames_and_health_flags() -> None:
    from disauto.localmesos.cli import build_parser
    from disauto.localmesos.cli import config_from_args

    args = build_parser().parse_args([
        "--agents", "3", "--cpus", "2", "--mem", "1GB", "--gpus", "0",
        "--resources", "cpus(ml):4;gpus(ml):1;mem(*):8192",
        "--agent-resources", "cpus:1", "--agent-hostname", "localhost",
        "--agent-ping-timeout", "200ms", "--max-agent-ping-timeouts", "3",
        "--agent-reregister-timeout", "5s", "--executor-reregistration-timeout", "1s"])
    config = config_from_args(args)
    first, second, _ = config.agent_list()
    assert str(first.total()).startswith("cpus(*):1; mem(*):1024; disk(*):")
    assert first.hostname == "localhost" and second.hostname == "127.0.0.1"
    total = second.total()
    assert total.reserved_for("ml").scalars == {"cpus": 4.0, "gpus": 1.0}
    assert total.reserved_for("*").scalar("mem") == 8192 and second.gpu_count == 1
    assert total.reserved_for("*").ranges("ports")  # names not given keep their defaults
    assert (config.agent_ping_timeout, config.max_agent_ping_timeouts) == (0.2, 3)
    assert config.agent_reregister_timeout == 5 and config.executor_reregistration_timeout == 1


def test_switch_user_is_on_unless_turned_off() -> None:
    """Mesos' --switch_user (default true); --no-switch-user runs tasks as the cluster's user."""
    from disauto.localmesos.cli import build_parser
    from disauto.localmesos.cli import config_from_args

    base = ["--gpus", "0"]
    assert config_from_args(build_parser().parse_args(base)).switch_user is True
    assert config_from_args(build_parser().parse_args(
        [*base, "--no-switch-user"])).switch_user is False
    assert config_from_args(build_parser().parse_args(
        [*base, "--switch-user"])).switch_user is True


def test_parse_attributes() -> None:
    assert parse_attributes("rack:r1; zone:eu ;cores:8") == {"rack": "r1", "zone": "eu",
                                                             "cores": 8.0}
    assert parse_attributes("") == {}
    with pytest.raises(UsageError, match="NAME:VALUE"):
        parse_attributes("rack:")


def test_load_credentials(tmp_path: Path) -> None:
    json_file = tmp_path / "creds.json"
    json_file.write_text(json.dumps({"credentials": [{"principal": "a", "secret": "x"},
                                                     {"principal": "b", "secret": "y"}]}))
    assert load_credentials(str(json_file)) == {"a": "x", "b": "y"}
    assert load_credentials(f"file://{json_file}") == {"a": "x", "b": "y"}
    text_file = tmp_path / "creds.txt"
    text_file.write_text("# comment\na x\n\nb y\n")
    assert load_credentials(str(text_file)) == {"a": "x", "b": "y"}
    text_file.write_text("a x\nb y z\n")
    with pytest.raises(UsageError, match="line 2"):
        load_credentials(str(text_file))
    json_file.write_text('{"credentials": [{"principal": "a"}]}')
    with pytest.raises(UsageError, match=r"credentials\[0\]"):
        load_credentials(str(json_file))
    json_file.write_text("{nope")
    with pytest.raises(UsageError, match="not valid JSON"):
        load_credentials(str(json_file))
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(UsageError, match="no credentials"):
        load_credentials(str(empty))


# -- the real command -------------------------------------------------------------------------


def _command() -> list[str]:
    script = Path(sys.executable).parent / "da-cluster"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from localmesos.cli import main; "
            "sys.exit(main())"]


@pytest.fixture
def launch() -> Iterator[object]:
    procs: list[subprocess.Popen[str]] = []

    def start(*argv: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            _command() + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout is not None
        address = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("Master: "):
                address = line.split()[1]
                break
        return proc, address

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _get(address: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    host, port = address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("GET" if not headers else "POST", path, "{}" if headers else None,
                     headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_da_cluster_boots_serves_and_stops_on_signal(launch: object, sig: int) -> None:
    proc, address = launch(  # type: ignore[operator]
        "--port", "0", "--agents", "3", "--cpus", "12", "--mem", "20GB", "--disk", "1GB",
        "--allocation-interval", "500ms", "--attributes", "rack:r1",
    )
    assert address, proc.stderr.read() if proc.poll() is not None else "no address printed"
    status, body = _get(address, "/master/state")
    state = json.loads(body)
    assert status == 200 and len(state["slaves"]) == 3
    for slave in state["slaves"]:
        assert slave["resources"]["cpus"] == 12.0 and slave["resources"]["mem"] == 20480.0
        assert slave["attributes"] == {"rack": "r1"}
    assert state["flags"]["allocation_interval"] == "500ms"
    proc.send_signal(sig)
    assert proc.wait(timeout=20) == 0
    err = proc.stderr.read()
    assert "Traceback" not in err


def test_da_cluster_with_credentials(launch: object, tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("alice s3cret\n")
    proc, address = launch("--port", "0", "--cpus", "1", "--mem", "512MB", "--disk", "1GB",
                           "--credentials", str(creds))  # type: ignore[operator]
    assert address
    status, _ = _get(address, "/api/v1/scheduler", {"Content-Type": "application/json"})
    assert status == 401
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 0


def test_da_cluster_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        code = main(["--port", str(port), "--cpus", "1", "--mem", "64MB", "--disk", "64MB"])
    finally:
        busy.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert err[0].startswith(f"da-cluster: error: --port {port}: cannot listen on")


def _agent_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command() + ["agent", *argv], capture_output=True, text=True,
                          timeout=30, check=False)


def test_da_cluster_agent_partitions_heals_and_restarts_an_agent(
        launch: object, tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("ops s3cret\n")
    proc, address = launch(  # type: ignore[operator]
        "--port", "0", "--agents", "2", "--cpus", "1", "--mem", "256MB", "--disk", "100MB",
        "--credentials", str(creds), "--agent-ping-timeout", "100ms",
        "--max-agent-ping-timeouts", "2", "--isolation", "posix/cpu,posix/mem")
    assert address, proc.stderr.read() if proc.poll() is not None else "no address printed"
    listed = _agent_cli("list", "--master", address, "--credentials", str(creds))
    assert listed.returncode == 0, listed.stderr
    agent_id = listed.stdout.split()[0]
    assert _get(address, "/localmesos/agents")[0] == 401  # the cluster's credentials guard it
    cut = _agent_cli("partition", agent_id, "--master", address, "--for", "2s",
                     "--credentials", str(creds))
    assert (cut.returncode, cut.stdout.strip()) == (0, f"agent {agent_id} is cut off for 2s")
    deadline = time.monotonic() + 10
    while json.loads(_get(address, "/master/state")[1])["unreachable_slaves"] != 1:
        assert time.monotonic() < deadline, "the agent was never marked unreachable"
        time.sleep(0.05)
    while len(json.loads(_get(address, "/master/state")[1])["slaves"]) != 2:
        assert time.monotonic() < deadline + 10, "the agent never came back"
        time.sleep(0.1)
    restart = _agent_cli("restart", agent_id, "--master", address, "--credentials", str(creds))
    assert restart.returncode == 0 and restart.stdout.strip() == f"agent {agent_id} restarts"
    unknown = _agent_cli("heal", "nope", "--master", address, "--credentials", str(creds))
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1
    assert "answered 404: no agent nope" in unknown.stderr
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["restart", "--master", "127.0.0.1:1"], "restart needs an agent id"),
    (["partition", "a", "--master", "127.0.0.1:1", "--for", "soon"], "--for: invalid duration"),
    (["heal", "a", "--master", "127.0.0.1:1", "--for", "1s"], "heal takes no duration"),
    (["restart", "a", "--master", "nowhere"], "--master: invalid address"),
    (["explode", "a", "--master", "127.0.0.1:1"], "invalid choice: 'explode' (choose from"),
    (["lst", "--master", "127.0.0.1:1"], "invalid choice: 'lst', maybe you meant 'list'?"),
    (["hael", "a", "--master", "127.0.0.1:1"], "maybe you meant 'heal'?"),
])
def test_da_cluster_agent_bad_flags_are_one_line(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, err = _run_main(capsys, "agent", *argv)
    assert code == 2 and err.count("\n") == 1 and message in err
    assert err.startswith("da-cluster agent: error: ")


def test_da_cluster_agent_reports_an_unreachable_cluster(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run_main(capsys, "agent", "list", "--master", "127.0.0.1:1")
    assert code == 1 and err.startswith("da-cluster agent: error: cannot reach 127.0.0.1:1")


def test_agents_alone_default_to_a_mesos_agents_port_and_a_master_alone_to_its_own() -> None:
    from disauto.localmesos.cli import build_parser
    from disauto.localmesos.cli import config_from_args
    from disauto.localmesos.cli_flags import master_address

    args = build_parser().parse_args(["--agents-only", "--master", "localhost:5050",
                                      "--gpus", "0"])
    assert (config_from_args(args).port, master_address(args)) == (5051, "localhost:5050")
    args = build_parser().parse_args(["--agents", "0", "--gpus", "0"])
    config = config_from_args(args)
    assert (config.port, config.agents, master_address(args)) == (5050, 0, None)
