"""A trial submitted with a parent (Population Based Training's exploit), through the real
gRPC service as AppCore submits it: the parent's latest checkpoint is copied for it before it
is recorded, its first try is told to resume from the copy, and its lineage is in the record
and results.json; a parent with no checkpoint gives a trial from scratch, an unknown parent is
refused in one line, a retried submission copies nothing again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
import json
from pathlib import Path

import grpc
import pytest

from disauto.appcore.framework_client import FrameworkClient
from disauto.common import task_env
from disauto.framework._checkpoints import JobCheckpoints
from disauto.framework._checkpoints import checkpoint_env
from disauto.framework._checkpoints import running_try
from disauto.framework._job import JobController
from disauto.framework._job.book import TrialBook
from disauto.framework._service import make_server
from disauto.framework._store import JobStore
from disauto.submit.results import trial_dict
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import job_config


pytestmark = pytest.mark.integration  # a gRPC server

ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}


class Served:
    """A job wired as the runner builder wires it, served on loopback, and AppCore's client."""

    def __init__(self, folder: Path) -> None:
        self.config = replace(job_config(max_trials=6), checkpoint_keep=3)
        self.store = JobStore(folder / "job.db")
        self.checkpoints = JobCheckpoints(self.config, folder,
                                          lambda number: running_try(self.book, number))
        self.book = TrialBook(self.store, self.checkpoints.resume_point)
        self.controller = JobController(self.config, self.store, JOB_TOKEN, book=self.book)
        self.server, port = make_server(self.controller, "127.0.0.1", 0,
                                        checkpoints=self.checkpoints)
        self.server.start()
        self.client = FrameworkClient(f"127.0.0.1:{port}", JOB_TOKEN, timeout=5.0)

    def close(self) -> None:
        self.client.close()
        self.server.stop(None)
        self.store.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    made = Served(tmp_path)
    yield made
    made.close()


def test_a_child_resumes_from_a_copy_of_its_parent_s_latest_checkpoint(served: Served) -> None:
    served.client.submit_many([(1, ASSIGN), (2, {**ASSIGN, "layers": 3})], priority=0)
    for step in (2, 4):
        served.checkpoints.save(1, 0, step, 5, [f"at {step}".encode()])
    explored = {**ASSIGN, "lr": 0.012}
    [proto] = served.client.submit_many([(3, explored)], priority=0, parents={3: 1})
    assert proto.parent == 1
    child = served.book.require(3)
    assert child.lineage == {"parent": 1, "from_step": 4, "parent_assignment": ASSIGN}
    assert child.resumed_from is not None
    assert (child.resumed_from["trial"], child.resumed_from["step"]) == (1, 4)
    told = json.loads(checkpoint_env(served.config, child)[task_env.RESUME_CHECKPOINT])
    assert told == child.resumed_from
    assert b"".join(served.checkpoints.chunks(3, told["name"])) == b"at 4"
    shown = trial_dict(child)
    assert (shown["parent"], shown["from_step"]) == (1, 4)
    assert shown["explored"] == {"lr": {"old": 0.01, "new": 0.012}}
    assert trial_dict(served.book.require(1))["explored"] is None
    # A restarted AppCore restores who descends from whom.
    restored = {t.number: t.parent for t in served.book.history("accuracy")}
    assert restored == {1: 0, 2: 0, 3: 1}
    # A retried submission answers the recorded trial and copies nothing again.
    served.checkpoints.save(1, 0, 6, 4, [b"at 6"])
    served.client.submit_many([(3, explored)], priority=0, parents={3: 1})
    assert served.book.require(3).lineage["from_step"] == 4
    assert len(list(served.checkpoints.folder.trial_dir(3).iterdir())) == 1


def test_a_parent_without_a_checkpoint_gives_a_trial_from_scratch(served: Served) -> None:
    served.client.submit_many([(1, ASSIGN)], priority=0)
    served.client.submit_many([(2, ASSIGN)], priority=0, parents={2: 1})
    child = served.book.require(2)
    assert child.lineage == {"parent": 1, "from_step": None, "parent_assignment": ASSIGN}
    assert child.resumed_from is None
    assert task_env.RESUME_CHECKPOINT not in checkpoint_env(served.config, child)


def test_an_unknown_parent_is_refused_in_one_line(served: Served) -> None:
    served.client.submit_many([(1, ASSIGN)], priority=0)
    with pytest.raises(grpc.RpcError) as caught:
        served.client.submit_many([(2, ASSIGN)], priority=0, parents={2: 9})
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "trial 2: its parent trial 9 is not a recorded trial"
    assert served.book.get(2) is None
