"""The checks of a master before the framework subscribes: reachable, and accepting our
credentials (a real embedded master with HTTP authentication)."""

from __future__ import annotations

from collections.abc import Iterator
import http.server
from pathlib import Path
import threading
import time

import pytest

from disauto.framework._master_endpoint import MasterUnreachableError
from disauto.framework._master_endpoint import check_credentials
from disauto.framework._master_endpoint import check_master
from disauto.localmesos.cluster import ClusterConfig
from disauto.localmesos.cluster import LocalCluster


pytestmark = pytest.mark.integration  # starts the embedded master


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(ClusterConfig(agents=1, cpus=1.0, mem_mb=256.0, work_dir=tmp_path,
                                         credentials={"alice": "s3cret"}))
    cluster.start()
    yield cluster
    cluster.stop()


def test_missing_credentials_are_one_line_at_once(secured: LocalCluster) -> None:
    assert check_master(secured.address)
    with pytest.raises(MasterUnreachableError) as caught:
        check_credentials(secured.address, None, None)
    assert str(caught.value) == (f"the Mesos master at {secured.address} requires "
                                 "authentication; give --principal and --secret-file")


def test_wrong_credentials_name_the_principal(secured: LocalCluster) -> None:
    with pytest.raises(MasterUnreachableError, match="refused principal 'alice'; check"):
        check_credentials(secured.address, "alice", "wrong")
    with pytest.raises(MasterUnreachableError, match="refused principal 'bob'"):
        check_credentials(secured.address, "bob", "s3cret")


def test_the_right_credentials_and_an_open_master_pass(secured: LocalCluster,
                                                       tmp_path: Path) -> None:
    check_credentials(secured.address, "alice", "s3cret")
    open_cluster = LocalCluster(ClusterConfig(agents=1, cpus=1.0, mem_mb=256.0,
                                              work_dir=tmp_path / "open"))
    open_cluster.start()
    try:
        check_credentials(open_cluster.address, None, None)
    finally:
        open_cluster.stop()


def test_an_unreachable_master_is_named() -> None:
    with pytest.raises(MasterUnreachableError, match="cannot reach the Mesos master at "
                                                     "127.0.0.1:9"):
        check_master("127.0.0.1:9", timeout=2)


def test_a_busy_master_that_took_the_connection_is_waited_for() -> None:
    """Answering /version slower than the connection's timeout is busy, not away (issue 29:
    50 jobs submitted at once to one embedded master)."""
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            time.sleep(1.0)
            body = b'{"version": "1.11.0"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.handle_error = lambda *args: None  # type: ignore[method-assign] # the client left
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        assert check_master(address, timeout=0.3) == "1.11.0"
        with pytest.raises(MasterUnreachableError, match="timed out"):
            check_master(address, timeout=0.3, answer_timeout=0.3)
    finally:
        server.shutdown()
        server.server_close()
