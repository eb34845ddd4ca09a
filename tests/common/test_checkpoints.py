"""A trial's checkpoints on disk: named by save and step, written whole or not at all, the
oldest dropped past ``keep``, copied into another trial's folder marked with where it came
from, and packed as a tar of a file or a folder under its own name."""

from __future__ import annotations

from pathlib import Path
import tarfile

import pytest

from disauto.common.checkpoints import CheckpointError
from disauto.common.checkpoints import CheckpointFolder
from disauto.common.checkpoints import CheckpointTooLargeError
from disauto.common.checkpoints import checkpoint_name
from disauto.common.checkpoints import pack
from disauto.common.checkpoints import parse_name
from disauto.common.checkpoints import unpack


def names(folder: CheckpointFolder, trial: int) -> list[str]:
    return [c.name for c in folder.checkpoints(trial)]


def test_names_carry_the_save_the_step_and_where_a_copy_came_from() -> None:
    assert checkpoint_name(3, 7) == "000003-step-7.ckpt"
    assert checkpoint_name(1, 12, origin=4) == "000001-step-12-of-trial-0004.ckpt"
    assert parse_name("000003-step-7.ckpt") == (3, 7, None)
    assert parse_name("000001-step-12-of-trial-0004.ckpt") == (1, 12, 4)
    for other in ("../job.db", ".000003-step-7.ckpt.12.tmp", "3-step-7.ckpt", "x.ckpt"):
        assert parse_name(other) is None


def test_the_latest_is_the_last_saved_whatever_its_step_and_the_oldest_go_past_keep(
        tmp_path: Path) -> None:
    folder = CheckpointFolder(tmp_path)
    for step in (4, 5, 2):  # a try that resumed from an earlier step saves a lower one
        folder.write(7, step, [b"state at %d" % step], max_bytes=100)
    assert names(folder, 7) == ["000001-step-4.ckpt", "000002-step-5.ckpt",
                                "000003-step-2.ckpt"]
    latest = folder.latest(7)
    assert latest is not None and (latest.step, latest.size) == (2, 10)
    assert latest.point(7) == {"trial": 7, "step": 2, "name": "000003-step-2.ckpt"}
    assert folder.prune(7, keep=2) == ["000001-step-4.ckpt"]
    assert names(folder, 7) == ["000002-step-5.ckpt", "000003-step-2.ckpt"]
    assert b"".join(folder.read(7, "000003-step-2.ckpt")) == b"state at 2"
    assert folder.latest(8) is None and folder.checkpoints(8) == []


def test_a_checkpoint_over_the_bound_leaves_nothing_and_the_earlier_ones_as_they_were(
        tmp_path: Path) -> None:
    folder = CheckpointFolder(tmp_path)
    folder.write(1, 1, [b"x" * 10], max_bytes=10)
    with pytest.raises(CheckpointTooLargeError, match="over the job's --checkpoint-max-size "
                                                      r"\(10 bytes\); it was not saved"):
        folder.write(1, 2, [b"x" * 6, b"x" * 6], max_bytes=10)
    assert sorted(p.name for p in folder.trial_dir(1).iterdir()) == ["000001-step-1.ckpt"]
    assert folder.write(1, 3, [b"y"], max_bytes=10).name == "000002-step-3.ckpt"


def test_a_name_that_is_no_checkpoint_or_not_there_is_refused_in_one_line(
        tmp_path: Path) -> None:
    folder = CheckpointFolder(tmp_path)
    (tmp_path / "job.db").write_text("the record")
    with pytest.raises(CheckpointError, match="'../job.db' is not the name of a checkpoint"):
        folder.path(1, "../job.db")
    with pytest.raises(CheckpointError, match="trial 1 has no checkpoint 000001-step-1.ckpt"):
        folder.path(1, "000001-step-1.ckpt")


def test_a_copy_starts_another_trial_from_it_and_names_the_trial_it_came_from(
        tmp_path: Path) -> None:
    folder = CheckpointFolder(tmp_path)
    folder.write(3, 5, [b"three at 5"], max_bytes=100)
    folder.write(3, 6, [b"three at 6"], max_bytes=100)
    copied = folder.copy(3, 9)
    assert copied.name == "000001-step-6-of-trial-0003.ckpt"
    assert copied.point(9) == {"trial": 3, "step": 6, "name": copied.name}
    assert b"".join(folder.read(9, copied.name)) == b"three at 6"
    # A copy of a copy still names the trial whose training it continues.
    assert folder.copy(9, 10).point(10)["trial"] == 3
    assert folder.copy(3, 10, "000001-step-5.ckpt").step == 5
    with pytest.raises(CheckpointError, match="trial 4 has no checkpoint"):
        folder.copy(4, 10)


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_pack_and_unpack_give_back_what_was_saved_under_its_own_name(
        tmp_path: Path, kind: str) -> None:
    if kind == "file":
        source = tmp_path / "model.pt"
        source.write_bytes(b"weights")
    else:
        source = tmp_path / "model"
        (source / "sub").mkdir(parents=True)
        (source / "sub" / "w.bin").write_bytes(b"weights")
    archive = tmp_path / "c.tar"
    assert pack(source, archive) == archive.stat().st_size
    back = unpack(archive, tmp_path / "out")
    assert back == tmp_path / "out" / source.name
    inner = back if kind == "file" else back / "sub" / "w.bin"
    assert inner.read_bytes() == b"weights"


def test_an_archive_of_several_names_is_no_checkpoint(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).write_text(name)
    archive = tmp_path / "two.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "a", arcname="a")
        tar.add(tmp_path / "b", arcname="b")
    with pytest.raises(CheckpointError, match="holds 2 top-level names"):
        unpack(archive, tmp_path / "out")
