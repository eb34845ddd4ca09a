"""The fetcher on real files, real archives and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
import gzip
import io
import os
from pathlib import Path
import socket
import stat
import tarfile
import threading
import time
import zipfile

import pytest

from disauto.localmesos.agent.fetcher import FetchCancelled
from disauto.localmesos.agent.fetcher import FetchError
from disauto.localmesos.agent.fetcher import fetch_uri
from disauto.localmesos.agent.fetcher import fetch_uris
from tests.localmesos.web_support import serving


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture
def served(tmp_path: Path) -> Path:
    root = tmp_path / "www"
    root.mkdir()
    return root


@pytest.fixture
def http_url(served: Path) -> Iterator[str]:
    with serving(served) as url:
        yield url


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    path = tmp_path / "sandbox"
    path.mkdir()
    return path


def make_tar(path: Path, files: dict[str, bytes], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def test_local_path_and_file_url_are_copied(tmp_path: Path, sandbox: Path) -> None:
    src = tmp_path / "params.json"
    src.write_text('{"lr": 0.1}')

    assert fetch_uri({"value": str(src)}, sandbox) == sandbox / "params.json"
    assert (sandbox / "params.json").read_text() == '{"lr": 0.1}'
    (sandbox / "params.json").unlink()
    fetch_uri({"value": src.as_uri()}, sandbox)
    assert (sandbox / "params.json").read_text() == '{"lr": 0.1}'
    assert not any(p.name.endswith(".fetching") for p in sandbox.iterdir())


def test_output_file_renames_and_may_not_leave_the_sandbox(tmp_path: Path, sandbox: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text("print(1)")

    fetch_uri({"value": str(src), "output_file": "code/main.py"}, sandbox)
    assert (sandbox / "code" / "main.py").read_text() == "print(1)"
    for bad in ("../escape.py", "/tmp/abs.py", "code/../../x.py"):
        with pytest.raises(FetchError, match="output_file") as err:
            fetch_uri({"value": str(src), "output_file": bad}, sandbox)
        assert str(src) in str(err.value)
    assert not (tmp_path / "escape.py").exists()


def test_executable_is_chmodded_and_not_extracted(tmp_path: Path, sandbox: Path) -> None:
    archive = make_tar(tmp_path / "tool.tar.gz", {"inner.txt": b"x"}, "w:gz")

    fetched = fetch_uri({"value": str(archive), "executable": True}, sandbox)
    assert fetched.stat().st_mode & stat.S_IXUSR
    assert not (sandbox / "inner.txt").exists()


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("a.tar", "w"),
        ("a.tar.gz", "w:gz"),
        ("a.tgz", "w:gz"),
        ("a.tar.bz2", "w:bz2"),
        ("a.tar.xz", "w:xz"),
    ],
)
def test_tar_archives_are_extracted(tmp_path: Path, sandbox: Path, name: str, mode: str) -> None:
    archive = make_tar(
        tmp_path / name, {"pkg/run.sh": b"#!/bin/sh\necho hi\n", "pkg/data.txt": b"d"}, mode
    )

    fetch_uri({"value": str(archive)}, sandbox)
    assert (sandbox / "pkg" / "data.txt").read_bytes() == b"d"
    assert (sandbox / "pkg" / "run.sh").stat().st_mode & stat.S_IXUSR
    assert (sandbox / name).exists()  # the archive is kept, as in Mesos


def test_zip_and_single_gz_are_extracted(tmp_path: Path, sandbox: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("dir/readme.txt", "zipped")
        info = zipfile.ZipInfo("dir/tool.sh")
        info.external_attr = (stat.S_IFREG | 0o755) << 16
        zf.writestr(info, "#!/bin/sh\n")
    single = tmp_path / "weights.bin.gz"
    single.write_bytes(gzip.compress(b"\x00\x01weights"))

    fetch_uris([{"value": str(archive)}, {"value": str(single)}], sandbox)
    assert (sandbox / "dir" / "readme.txt").read_text() == "zipped"
    assert (sandbox / "dir" / "tool.sh").stat().st_mode & stat.S_IXUSR
    assert (sandbox / "weights.bin").read_bytes() == b"\x00\x01weights"


def test_extract_false_keeps_the_archive_packed(tmp_path: Path, sandbox: Path) -> None:
    archive = make_tar(tmp_path / "a.tgz", {"inner.txt": b"x"}, "w:gz")
    fetch_uri({"value": str(archive), "extract": False}, sandbox)
    assert (sandbox / "a.tgz").exists()
    assert not (sandbox / "inner.txt").exists()


def test_tar_members_cannot_escape_the_sandbox(tmp_path: Path, sandbox: Path) -> None:
    cases = {
        "dotdot.tar": lambda t: _add(t, "../../evil.txt"),
        "symlink.tar": lambda t: _add_link(t, "link", str(tmp_path)),
        "relative-link.tar": lambda t: _add_link(t, "up", "../.."),
    }
    for name, build in cases.items():
        path = tmp_path / name
        with tarfile.open(path, "w") as tar:
            build(tar)
        with pytest.raises(FetchError, match="Failed to extract") as err:
            fetch_uri({"value": str(path)}, sandbox)
        assert str(path) in str(err.value)
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path.parent / "evil.txt").exists()
    assert not (sandbox / "link").exists()
    assert not (sandbox / "up").exists()


def test_absolute_tar_members_land_inside_the_sandbox(tmp_path: Path, sandbox: Path) -> None:
    # Like GNU tar ("Removing leading '/' from member names").
    target = tmp_path / "abs-evil.txt"
    path = tmp_path / "absolute.tar"
    with tarfile.open(path, "w") as tar:
        _add(tar, str(target))
    fetch_uri({"value": str(path)}, sandbox)
    assert not target.exists()
    assert (sandbox / str(target).lstrip("/")).read_bytes() == b"evil"


def _add(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.size = 4
    tar.addfile(info, io.BytesIO(b"evil"))


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def test_zip_members_cannot_escape_the_sandbox(tmp_path: Path, sandbox: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.txt", "fine")
        zf.writestr("../../evil.txt", "evil")
    with pytest.raises(FetchError, match="leaves the sandbox"):
        fetch_uri({"value": str(archive)}, sandbox)
    assert not (tmp_path / "evil.txt").exists()
    assert not (sandbox / "ok.txt").exists()  # checked before anything is written


def test_http_download_streams_and_extracts(served: Path, http_url: str, sandbox: Path) -> None:
    big = os.urandom(3 * 1024 * 1024 + 17)  # several chunks
    (served / "blob.bin").write_bytes(big)
    make_tar(served / "code.tar.gz", {"main.py": b"print('hi')\n"}, "w:gz")
    (served / "with space.txt").write_text("spaced")

    fetch_uris(
        [
            {"value": f"{http_url}/blob.bin"},
            {"value": f"{http_url}/code.tar.gz"},
            {"value": f"{http_url}/with%20space.txt"},
        ],
        sandbox,
    )
    assert (sandbox / "blob.bin").read_bytes() == big
    assert (sandbox / "main.py").read_text() == "print('hi')\n"
    assert (sandbox / "with space.txt").read_text() == "spaced"


def test_http_errors_are_one_line_and_name_the_uri(http_url: str, sandbox: Path) -> None:
    url = f"{http_url}/missing.tar.gz"
    with pytest.raises(FetchError) as err:
        fetch_uri({"value": url}, sandbox)
    assert str(err.value) == f"Failed to fetch '{url}': HTTP 404 File not found"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    url = f"http://127.0.0.1:{closed_port}/x"
    with pytest.raises(FetchError, match=f"Failed to fetch '{url}': .*refused"):
        fetch_uri({"value": url, "output_file": "x"}, sandbox, timeout=2)
    with pytest.raises(FetchError, match="cannot tell a file name"):
        fetch_uri({"value": f"{http_url}/"}, sandbox)


def test_local_errors_name_the_uri(tmp_path: Path, sandbox: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(FetchError, match=f"'{missing}': No such file or directory"):
        fetch_uri({"value": str(missing)}, sandbox)
    with pytest.raises(FetchError, match="is a directory"):
        fetch_uri({"value": str(tmp_path)}, sandbox)
    with pytest.raises(FetchError, match="unsupported scheme 'hdfs'"):
        fetch_uri({"value": "hdfs://nn/file"}, sandbox)
    with pytest.raises(FetchError, match="relative path"):
        fetch_uri({"value": "relative/file.txt"}, sandbox)
    with pytest.raises(FetchError, match="no 'value'"):
        fetch_uri({}, sandbox)
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not a tarball")
    with pytest.raises(FetchError, match=f"Failed to extract '{broken}'"):
        fetch_uri({"value": str(broken)}, sandbox)


def test_a_slow_download_is_cancelled_between_chunks(http_url: str, sandbox: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(FetchCancelled):
        fetch_uri({"value": f"{http_url}/slow"}, sandbox, cancel=cancel)
    assert time.monotonic() - started < 2.0
    assert list(sandbox.iterdir()) == []  # the partial file is removed
