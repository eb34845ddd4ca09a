"""Sandbox layout and the /files browse/read semantics, on real directories and symlinks."""

from __future__ import annotations

import os
from pathlib import Path
import pwd
import stat

import pytest

from disauto.localmesos.agent import sandbox
from disauto.localmesos.agent.sandbox import READ_CAP_BYTES
from disauto.localmesos.agent.sandbox import SandboxError
from disauto.localmesos.agent.sandbox import SandboxNotFound


@pytest.fixture
def box(tmp_path: Path) -> Path:
    root = sandbox.create_sandbox(tmp_path / "work", "M-S0", "M-0000", "task-1", "c1")
    (root / "stdout").write_bytes(b"hello world\n")
    (root / "stderr").write_bytes(b"")
    (root / "sub").mkdir()
    (root / "sub" / "data.txt").write_text("abc")
    return root


def test_layout_follows_mesos(tmp_path: Path) -> None:
    path = sandbox.create_sandbox(tmp_path, "A-S1", "F-0001", "exec-1", "cid-1")

    assert path == tmp_path / "slaves/A-S1/frameworks/F-0001/executors/exec-1/runs/cid-1"
    assert path.is_dir()
    assert os.readlink(path.parent / "latest") == "cid-1"
    again = sandbox.create_sandbox(tmp_path, "A-S1", "F-0001", "exec-1", "cid-2")
    assert (path.parent / "latest").resolve() == again.resolve()
    assert sandbox.latest_virtual_path("A-S1", "F-0001", "exec-1") == (
        "/slaves/A-S1/frameworks/F-0001/executors/exec-1/runs/latest"
    )


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "x\0y"])
def test_ids_that_are_not_one_path_component_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid task id"):
        sandbox.check_id(bad, what="task id")
    with pytest.raises(ValueError):
        sandbox.sandbox_dir(tmp_path, "A", "F", bad, "c")


def test_browse_lists_entries_sorted_in_mesos_shape(box: Path) -> None:
    listing = sandbox.browse([box], str(box))

    assert [e["path"] for e in listing] == [
        f"{box}/stderr",
        f"{box}/stdout",
        f"{box}/sub",
    ]
    out = listing[1]
    assert set(out) == {"path", "nlink", "size", "mtime", "mode", "uid", "gid"}
    assert out["size"] == len(b"hello world\n")
    assert out["mode"] == stat.filemode((box / "stdout").stat().st_mode)
    assert out["mode"].startswith("-")
    assert listing[2]["mode"].startswith("d")
    assert out["uid"] == pwd.getpwuid(os.getuid()).pw_name
    assert isinstance(out["mtime"], int)


def test_browse_a_file_answers_that_file_and_trailing_slash_is_ignored(box: Path) -> None:
    assert [e["path"] for e in sandbox.browse([box], f"{box}/sub/data.txt")] == [
        f"{box}/sub/data.txt"
    ]
    assert [e["path"] for e in sandbox.browse([box], f"{box}/sub/")] == [f"{box}/sub/data.txt"]


def test_virtual_roots_resolve_by_longest_prefix(box: Path) -> None:
    roots = {
        "/slaves/M-S0/frameworks/M-0000/executors/task-1/runs/latest": box.parent / "latest",
        "/slaves/M-S0/frameworks/M-0000/executors/task-1/runs/latest/sub": box,  # longer wins
    }
    listing = sandbox.browse(roots, "/slaves/M-S0/frameworks/M-0000/executors/task-1/runs/latest")
    assert [e["path"].rsplit("/", 1)[1] for e in listing] == ["stderr", "stdout", "sub"]
    deeper = sandbox.read(
        roots, "/slaves/M-S0/frameworks/M-0000/executors/task-1/runs/latest/sub/stdout", 0
    )
    assert deeper["data"] == "hello world\n"


def test_read_offsets_and_lengths_follow_mesos(box: Path) -> None:
    path = f"{box}/stdout"

    assert sandbox.read([box], path) == {"data": "", "offset": 12}  # offset -1: the size
    assert sandbox.read([box], path, offset=0) == {"data": "hello world\n", "offset": 0}
    assert sandbox.read([box], path, offset=6, length=5) == {"data": "world", "offset": 6}
    assert sandbox.read([box], path, offset=6, length=-1) == {"data": "world\n", "offset": 6}
    assert sandbox.read([box], path, offset=50) == {"data": "", "offset": 12}
    assert sandbox.read([box], path, offset=3, length=0) == {"data": "", "offset": 3}


def test_read_sees_data_appended_live(box: Path) -> None:
    with open(box / "stdout", "ab", buffering=0) as out:
        start = sandbox.read([box], f"{box}/stdout")["offset"]
        out.write(b"more\n")
        assert sandbox.read([box], f"{box}/stdout", offset=start) == {
            "data": "more\n",
            "offset": start,
        }


def test_read_is_capped_at_16_pages(box: Path) -> None:
    (box / "big").write_bytes(b"x" * (READ_CAP_BYTES + 1000))
    answer = sandbox.read([box], f"{box}/big", offset=0)
    assert len(answer["data"]) == READ_CAP_BYTES


def test_read_bad_requests(box: Path) -> None:
    with pytest.raises(SandboxError, match="Negative offset") as err:
        sandbox.read([box], f"{box}/stdout", offset=-2)
    assert err.value.http_status == 400
    with pytest.raises(SandboxError, match="Negative length"):
        sandbox.read([box], f"{box}/stdout", offset=0, length=-5)
    with pytest.raises(SandboxError, match="directory") as err:
        sandbox.read([box], f"{box}/sub")
    assert err.value.http_status == 400
    with pytest.raises(SandboxError, match="path"):
        sandbox.read([box], "")


def test_missing_and_unserved_paths_are_not_found(box: Path, tmp_path: Path) -> None:
    with pytest.raises(SandboxNotFound) as err:
        sandbox.read([box], f"{box}/nope")
    assert err.value.http_status == 404
    with pytest.raises(SandboxNotFound):
        sandbox.browse([box], str(tmp_path))
    # A sibling whose name merely starts with the root's name is not inside it.
    sibling = Path(f"{box}x")
    sibling.mkdir()
    (sibling / "secret").write_text("s")
    with pytest.raises(SandboxNotFound):
        sandbox.read([box], f"{sibling}/secret", offset=0)


def test_dotdot_cannot_leave_the_root(box: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    escape = f"{box}/../../../../../../../../secret.txt"
    with pytest.raises(SandboxError) as err:
        sandbox.read([box], escape, offset=0)
    assert err.value.http_status == 400
    inside = f"{box}/sub/../stdout"
    assert sandbox.read([box], inside, offset=0)["data"] == "hello world\n"


def test_symlinks_out_of_the_root_are_never_followed(box: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (box / "leak").symlink_to(secret)
    (box / "leakdir").symlink_to(tmp_path)
    (box / "alias").symlink_to(box / "stdout")  # inside: followed

    for path in (f"{box}/leak", f"{box}/leakdir/secret.txt"):
        with pytest.raises(SandboxError, match="inaccessible"):
            sandbox.read([box], path, offset=0)
    with pytest.raises(SandboxError, match="inaccessible"):
        sandbox.browse([box], f"{box}/leakdir")

    entries = {e["path"].rsplit("/", 1)[1]: e for e in sandbox.browse([box], str(box))}
    assert entries["leak"]["mode"].startswith("l")
    assert entries["leak"]["size"] != secret.stat().st_size
    assert entries["alias"]["mode"].startswith("-")
    assert entries["alias"]["size"] == 12
    assert sandbox.read([box], f"{box}/alias", offset=0)["data"] == "hello world\n"


def test_root_reached_through_a_symlink_is_served_under_both_paths(
    box: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link-to-box"
    link.symlink_to(box)
    assert sandbox.read([link], f"{link}/stdout", offset=0)["data"] == "hello world\n"
    assert sandbox.read([link], f"{box}/stdout", offset=0)["data"] == "hello world\n"


def test_open_file_returns_a_readable_descriptor(box: Path) -> None:
    fd, real = sandbox.open_file([box], f"{box}/sub/data.txt")
    try:
        assert os.read(fd, 10) == b"abc"
    finally:
        os.close(fd)
    assert real == (box / "sub" / "data.txt").resolve()
