"""The file server that feeds Mesos' fetcher: real HTTP fetches of what it publishes."""

from __future__ import annotations

from collections.abc import Iterator
import io
from pathlib import Path
import tarfile
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.parse import urlunsplit
from urllib.request import urlopen

import pytest

from disauto.framework._fileserver import FileServer
from disauto.framework._spec import InputSpec


pytestmark = pytest.mark.integration  # starts processes or servers


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("job")


@pytest.fixture(scope="module")
def server(job_dir: Path) -> Iterator[FileServer]:
    # One server for the module: stopping one takes serve_forever's 0.5 s poll interval.
    running = FileServer(job_dir, advertise_host="127.0.0.1", bind_host="127.0.0.1")
    running.start()
    yield running
    running.stop()


def fetch(url: str) -> bytes:
    with urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback test server
        return bytes(response.read())


def status_of(url: str) -> int:
    with pytest.raises(HTTPError) as caught:
        fetch(url)
    return caught.value.code


def test_files_are_served_under_a_secret_prefix(server: FileServer, tmp_path: Path) -> None:
    script = tmp_path / "my train.py"
    script.write_text("print('hi')\n")
    script.chmod(0o755)
    data = tmp_path / "table.csv"
    data.write_bytes(b"a,b\n1,2\n")
    uris = server.uris([str(script), str(data)], [])
    assert [u["output_file"] for u in uris] == ["my train.py", "table.csv"]
    assert [u["executable"] for u in uris] == [True, False]
    assert all(u["extract"] is False for u in uris)
    assert fetch(uris[0]["value"]) == b"print('hi')\n"  # the space is URL-quoted and back
    assert fetch(uris[1]["value"]) == b"a,b\n1,2\n"
    parts = urlsplit(uris[1]["value"])
    assert (parts.hostname, parts.port) == ("127.0.0.1", server.port)
    secret = parts.path.split("/")[1]
    assert len(secret) >= 16


def test_a_wrong_secret_or_an_unpublished_name_is_404(server: FileServer,
                                                      tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    url = server.uris([str(tmp_path / "f.txt")], [])[0]["value"]
    parts = urlsplit(url)
    _, secret, *rest = parts.path.split("/")
    wrong = urlunsplit(parts._replace(path="/" + "/".join(["not-the-secret", *rest])))
    assert status_of(wrong) == 404
    assert status_of(url + ".missing") == 404
    listing = urlunsplit(parts._replace(path=f"/{secret}/files/0/"))
    assert status_of(listing) == 404  # no directory listings either
    assert status_of(urlunsplit(parts._replace(path="/etc/passwd"))) == 404
    assert fetch(url) == b"x"


def test_folder_inputs_are_packed_with_the_input_name_as_top_folder(
        server: FileServer, tmp_path: Path, job_dir: Path) -> None:
    folder = tmp_path / "mnist-2024"
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "x.npy").write_bytes(b"\x00\x01")
    (folder / "labels.txt").write_text("0 1 2\n")
    uris = server.uris([], [InputSpec(str(folder), "data")])
    assert len(uris) == 1 and uris[0]["extract"] is True
    assert "output_file" not in uris[0]  # the fetcher extracts it into the sandbox
    assert uris[0]["value"].endswith("/data.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(fetch(uris[0]["value"])), mode="r:gz") as tar:
        names = sorted(tar.getnames())
        assert names == ["data", "data/labels.txt", "data/train", "data/train/x.npy"]
        member = tar.extractfile("data/train/x.npy")
        assert member is not None and member.read() == b"\x00\x01"
    assert (job_dir / "inputs" / "data.tar.gz").is_file()


def test_file_inputs_are_renamed_to_the_input_name(server: FileServer, tmp_path: Path) -> None:
    source = tmp_path / "digits-v3.npz"
    source.write_bytes(b"npz")
    (uri,) = server.uris([], [InputSpec(str(source), "digits.npz")])
    assert (uri["extract"], uri["output_file"]) == (False, "digits.npz")
    assert fetch(uri["value"]) == b"npz"


@pytest.mark.parametrize("source", ["http://data.example/mnist.tgz", "https://x/y",
                                    "hdfs://namenode/data", "s3://bucket/key",
                                    "s3a://bucket/key", "ftp://host/file"])
def test_remote_inputs_are_passed_through(server: FileServer, source: str) -> None:
    assert server.uris([], [InputSpec(source, "data")]) == [
        {"value": source, "extract": False, "output_file": "data"}]


def test_files_and_inputs_together_keep_their_order(server: FileServer, tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "c.bin"):
        (tmp_path / name).write_text(name)
    uris = server.uris([str(tmp_path / "a.py"), str(tmp_path / "b.py")],
                       [InputSpec("http://remote/x", "x"), InputSpec(str(tmp_path / "c.bin"),
                                                                     "c")])
    assert [u.get("output_file") for u in uris] == ["a.py", "b.py", "x", "c"]
    assert [fetch(u["value"]) for u in uris if u["value"].startswith("http://127.")] == [
        b"a.py", b"b.py", b"c.bin"]
