"""Session fixtures for the container tests (a real Docker engine and the small runner image) and
the UI tests (a real browser).

Nothing is skipped for a missing engine: ``tools/ensure_docker.sh`` installs ``docker.io`` (and
``mmdebstrap``) with apt-get when they are missing, starts ``dockerd`` when no engine answers and
waits for it; ``tools/docker_images.py`` builds the Debian base and the small AppRunner image,
or reuses them when their content hash is unchanged. Either failing fails the tests that need
them, with the script's own error.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import os
from pathlib import Path
import re
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest


ROOT = Path(__file__).resolve().parents[1]

# One thread a numerical library's pool, in this session and every process it starts (unless
# the caller says otherwise): unset, OpenBLAS spins a thread per core in each worker
# and their AppCores, and on this 2-core machine scikit-optimize's GP fitted 4-5 times slower.
for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium driven by Playwright (Debian's package, installed if missing).

    Nothing is skipped for a missing browser: ``tools/ensure_browser.sh`` installs it with
    apt-get, and its failing fails the tests that need one, with the script's own error. The
    flags keep Chromium from reaching for the network this machine does not have.
    """
    result = subprocess.run(
        ["bash", str(ROOT / "tools" / "ensure_browser.sh")],
        capture_output=True, text=True, timeout=900, check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"no browser: {result.stderr.strip()}", pytrace=False)
    executable = result.stdout.strip().splitlines()[-1]
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-dev-shm-usage"],
        )
        yield launched
        launched.close()


SCREENSHOTS = ROOT / "build" / "screenshots"
"""Where the UI tests keep their screenshots (test artifacts; the README copies its own)."""


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A low-level client of a running Docker engine (installed and started if needed).

    An engine this fixture started is stopped (by its pid) when the session ends; its images
    stay on disk for the next run.
    """
    started = time.monotonic()
    result = subprocess.run(
        ["bash", str(ROOT / "tools" / "ensure_docker.sh")],
        capture_output=True, text=True, timeout=900, check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"no Docker engine: {result.stderr.strip()}", pytrace=False)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    match = re.fullmatch(r"started dockerd (\d+)", last)
    our_engine = int(match.group(1)) if match else None
    import docker

    client = docker.APIClient(**docker.utils.kwargs_from_env(), version="auto", timeout=120)
    client.ping()
    print(f"\n[docker engine ready in {time.monotonic() - started:.1f} s]", file=sys.stderr)
    yield client
    client.close()
    if our_engine is not None:
        _stop_engine(our_engine)


def _stop_engine(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM the dockerd this session started and wait for it to exit."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)


@pytest.fixture(scope="session")
def runner_image(docker_engine: Any) -> str:
    """The tag of the small AppRunner image (Python, grpcio, protobuf, apprunner_sdk)."""
    started = time.monotonic()
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docker_images
    finally:
        sys.path.pop(0)
    try:
        tag = docker_images.ensure_image("apprunner-small")
    except docker_images.ImageBuildError as exc:
        pytest.fail(f"cannot build the runner image: {exc}", pytrace=False)
    print(f"[runner image {tag} ready in {time.monotonic() - started:.1f} s]", file=sys.stderr)
    return tag


# -- unit tests start nothing ---------------------------------------------------------------------

_STARTS_THINGS = ("integration", "slow")


class StartsProcessesOrServers(AssertionError):
    """A test without the ``integration`` (or ``slow``) marker started a process or server."""


@contextlib.contextmanager
def _nothing_started(nodeid: str) -> Iterator[None]:
    """Make a unit test fail at once if it starts a process, listens or connects anywhere.

    Keeps ``-m "not integration and not slow"`` (``make test-fast``) honest: a test that needs a
    real process or server says so with ``pytestmark = pytest.mark.integration``.
    """
    def refuse(what: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise StartsProcessesOrServers(
                f"{nodeid} {what}: mark it @pytest.mark.integration (tests that start "
                "processes or servers)")
        return call

    patches = [(socket.socket, "listen", refuse("listens on a socket")),
               (socket.socket, "connect", refuse("connects a socket")),
               (subprocess.Popen, "__init__", refuse("starts a process"))]
    grpc = sys.modules.get("grpc")
    if grpc is not None:
        patches += [(grpc, "server", refuse("starts a gRPC server")),
                    (grpc, "insecure_channel", refuse("opens a gRPC channel"))]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _guarded(item: pytest.Item) -> contextlib.AbstractContextManager[None]:
    if any(item.get_closest_marker(name) for name in _STARTS_THINGS):
        return contextlib.nullcontext()
    return _nothing_started(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        yield


# -- workers (`make test` runs pytest -n 3) -------------------------------------------------------

ENGINE_FIXTURES = frozenset({"docker_engine", "runner_image", "browser"})
"""Session fixtures that install and start machine-wide things (apt-get, dockerd, chromium):
every test that uses one runs on the same worker (``--dist loadgroup``), so one worker owns
the engine it starts and stops, and no two apt-gets race for dpkg's lock."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("engines"))


class _GroupedIds:
    """``--dist loadgroup`` keeps the tests of one ``xdist_group`` on one worker by their id,
    ``<nodeid>@<group>``. pytest-xdist 3.8 sets that id through ``item._nodeid``, which pytest 9
    no longer reads (its nodeid is ``item._id``), and its hook ran before the markers above were
    added: the grouped tests were spread over every worker. This hook runs last and gives each
    grouped test that id itself."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        from _pytest.nodeid import NodeId

        # On the workers xdist says so in its own option (its controller's is ``dist``).
        if not (config.getoption("dist", None) == "loadgroup"
                or getattr(config.option, "loadgroup", False)):
            return
        for item in items:
            groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name"))
                             for mark in item.iter_markers("xdist_group")})
            if groups and "@" not in item.nodeid:
                item._id = NodeId.parse(  # noqa: SLF001 - see the class docstring
                    f"{item.nodeid}@{'_'.join(groups)}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_GroupedIds(), "disauto-xdist-grouped-ids")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real ZooKeeper server (Debian's package, installed if missing: ``tools/
    ensure_zookeeper.sh``), for the tests that elect masters; each test takes a path of its
    own (``zookeeper.url("/name")``)."""
    from tests.zookeeper import ZooKeeperServer

    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()
