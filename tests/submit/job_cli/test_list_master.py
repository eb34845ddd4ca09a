"""``da-job list --master``: the frameworks a Mesos master knows, beside the local records."""

from __future__ import annotations

import http.client
import io
import json
from pathlib import Path

import pytest

from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster
from disauto.submit import job_cli
from disauto.submit.exit_status import ExitStatus


pytestmark = pytest.mark.integration


def _subscribe(cluster: LocalCluster, name: str,
               labels: list[dict[str, str]]) -> http.client.HTTPConnection:
    """A framework, subscribed over the scheduler API as pymesos would; it stays active while
    its stream (the connection returned) is open."""
    host, port = cluster.address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    body = json.dumps({"type": "SUBSCRIBE", "subscribe": {"framework_info": {
        "user": "u", "name": name, "labels": {"labels": labels}}}})
    connection.request("POST", "/api/v1/scheduler", body,
                       {"Content-Type": "application/json", "Accept": "application/json"})
    response = connection.getresponse()
    assert response.status == 200
    response.read(1)
    return connection


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = job_cli.run(["list", *argv], out)
    return int(code), out.getvalue()


def test_the_frameworks_of_a_master_with_their_disauto_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    with LocalCluster(ClusterConfig(agents=1, cpus=1.0, mem_mb=512.0,
                                    work_dir=tmp_path / "cluster")) as cluster:
        streams = [
            _subscribe(cluster, "mnist", [{"key": "disauto.job", "value": "mnist-20261124-abc"}]),
            _subscribe(cluster, "spark", []),
        ]
        code, out = _run("--master", cluster.address)
        assert code == ExitStatus.SUCCESS
        assert "no jobs under" in out and f"frameworks on the Mesos master at {cluster.address}" \
            in out
        lines = {line.split()[1]: line for line in out.splitlines()[3:] if line.strip()
                 and not line.startswith(("-", "framework"))}
        assert "mnist-20261124-abc (elsewhere)" in lines["mnist"]
        assert max(len(line) for line in out.splitlines()) <= 80
        assert "active" in lines["spark"] and lines["spark"].rstrip().endswith("-")
        code, out = _run("--master", cluster.address, "--json")
        listed = json.loads(out)
        assert listed["jobs"] == [] and {f["name"] for f in listed["frameworks"]} == {
            "mnist", "spark"}
        for stream in streams:
            stream.close()


def test_a_master_that_is_gone_is_one_line_and_exit_3(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    code = job_cli.main(["list", "--master", "127.0.0.1:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == ExitStatus.MASTER_UNREACHABLE
    assert len(err) == 1 and err[0].startswith("da-job: error: cannot reach the Mesos master "
                                               "at 127.0.0.1:1")


def test_an_unreadable_secret_file_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DISAUTO_HOME", str(tmp_path / "home"))
    missing = tmp_path / "nope"
    code = job_cli.main(["list", "--master", "127.0.0.1:1", "--principal", "p",
                         "--secret-file", str(missing)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == ExitStatus.USAGE and len(err) == 1 and "--secret-file" in err[0]
