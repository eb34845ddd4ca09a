"""A real ZooKeeper server for the tests that elect masters: Debian's package
(``tools/ensure_zookeeper.sh`` installs it), one standalone server on a free port with its data
in a temporary directory, stopped when the test session ends.
"""

from __future__ import annotations

from pathlib import Path
import socket
import subprocess
import time


ROOT = Path(__file__).resolve().parents[1]
SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ZooKeeperServer:
    """One standalone ZooKeeper server (see the module docstring).

    Args:
        data_dir: its snapshots and log, and its output (``zookeeper.log``).
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str = "/mesos") -> str:
        """``zk://127.0.0.1:PORT/PATH``."""
        return f"zk://{self.hosts}{path}"

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Install (if needed) and start the server; wait until it answers ``ruok``.

        Raises:
            RuntimeError: naming the script's error or the server's last output.
        """
        ensured = subprocess.run(["bash", str(ROOT / "tools" / "ensure_zookeeper.sh")],
                                 capture_output=True, text=True, timeout=900, check=False)
        if ensured.returncode != 0:
            raise RuntimeError(f"no ZooKeeper: {ensured.stderr.strip()}")
        classpath = ensured.stdout.strip().splitlines()[-1]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = (self.data_dir / "zookeeper.log").open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - Debian's java and jar
            ["java", "-Xmx256m", "-cp", classpath, "-Dzookeeper.admin.enableServer=false",
             "-Dzookeeper.4lw.commands.whitelist=ruok", SERVER_MAIN, str(self.port),
             str(self.data_dir / "data")],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.answers():
                return self
            time.sleep(0.2)
        self.stop()
        tail = (self.data_dir / "zookeeper.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"ZooKeeper did not start on port {self.port}: {tail}")

    def answers(self) -> bool:
        """Whether it answers ZooKeeper's ``ruok`` with ``imok``."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"ruok")
                return conn.recv(16) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
