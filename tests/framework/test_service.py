"""The framework's gRPC service end to end: make_server on a free port, real channels and stubs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import socket
import threading
from typing import Any

import grpc
import pytest

from disauto.common.space import assignment_to_proto
from disauto.common.tokens import trial_token
from disauto.framework import _meta as meta
from disauto.framework._job import JobController
from disauto.framework._service import make_server
from disauto.protos import common_pb2
from disauto.protos import framework_pb2
from disauto.protos import framework_pb2_grpc
from disauto.testing.inprocess import JOB_TOKEN
from disauto.testing.inprocess import Framework
from disauto.testing.inprocess import job_config
from disauto.testing.inprocess import trial_metadata


pytestmark = pytest.mark.integration  # starts processes or servers


ASSIGN = {"lr": 0.01, "layers": 2, "act": "relu"}
GOOD = trial_metadata(JOB_TOKEN)


@pytest.fixture
def framework(tmp_path: Path) -> Iterator[Framework]:
    running = Framework(tmp_path, job_config(max_trials=3))
    yield running
    running.close()


@pytest.fixture
def stub(framework: Framework) -> Iterator[framework_pb2_grpc.FrameworkServiceStub]:
    with grpc.insecure_channel(framework.address) as channel:
        yield framework_pb2_grpc.FrameworkServiceStub(channel)


def submit_request(number: int, assigned: dict[str, Any] = ASSIGN,
                   priority: int = 0) -> framework_pb2.SubmitTrialRequest:
    request = framework_pb2.SubmitTrialRequest(number=number, priority=priority)
    for name, value in assignment_to_proto(assigned).items():
        request.assignment[name].CopyFrom(value)
    return request


def submit_one(stub: framework_pb2_grpc.FrameworkServiceStub,
               request: framework_pb2.SubmitTrialRequest) -> common_pb2.Trial:
    """One trial through SubmitTrials; the trial as recorded."""
    reply = stub.SubmitTrials(framework_pb2.SubmitTrialsRequest(trials=[request]),
                              metadata=GOOD, timeout=5)
    return reply.trials[0]


def batch(*requests: framework_pb2.SubmitTrialRequest) -> framework_pb2.SubmitTrialsRequest:
    return framework_pb2.SubmitTrialsRequest(trials=list(requests))


def code_of(call: Any, request: Any, metadata: Any = GOOD) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        result = call(request, metadata=metadata, timeout=5)
        if not hasattr(result, "ByteSize"):  # a stream: errors arrive when read
            list(result)
    return caught.value.code(), caught.value.details()


def test_make_server_reports_its_port_and_fails_loudly_on_a_taken_one(
        framework: Framework) -> None:
    server, port = make_server(framework.controller, host="127.0.0.1", port=0)
    assert port > 0
    server.stop(None)
    # Taken by another gRPC server (the fixture's), which sets SO_REUSEPORT, or by a plain one.
    taken_by_grpc = int(framework.address.rsplit(":", 1)[1])
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        plain.listen()
        for port in (taken_by_grpc, plain.getsockname()[1]):
            with pytest.raises(OSError, match="cannot bind the framework's gRPC server to "
                                              f"127.0.0.1:{port}"):
                make_server(framework.controller, host="127.0.0.1", port=port)


@pytest.mark.parametrize("metadata", [(), (("x-disauto-token", "wrong"),),
                                      (("x-disauto-token", trial_token(JOB_TOKEN, 1)),)],
                         ids=["missing", "wrong", "a-trial-token"])
def test_every_appcore_call_needs_the_job_token(stub: framework_pb2_grpc.FrameworkServiceStub,
                                                framework: Framework, metadata: Any) -> None:
    calls = [
        (stub.AttachAppCore, framework_pb2.AttachAppCoreRequest(address="h:1")),
        (stub.SubmitTrials, batch(submit_request(1))),
        (stub.RecordReport, common_pb2.Report(trial_number=1)),
        (stub.WatchTrials, framework_pb2.WatchTrialsRequest()),
        (stub.FinishJob, framework_pb2.FinishJobRequest(outcome=framework_pb2.STOPPED)),
    ]
    for call, request in calls:
        code, details = code_of(call, request, metadata)
        assert code == grpc.StatusCode.UNAUTHENTICATED, call
        assert details == "missing or wrong job token"
    # Nothing happened.
    assert framework.controller.trials() == []
    assert framework.controller.outcome is None
    assert framework.controller.tasks.appcore_address() == ""


def test_attach_returns_the_job_and_what_is_recorded(
        stub: framework_pb2_grpc.FrameworkServiceStub, framework: Framework) -> None:
    submit_one(stub, submit_request(1))
    reply = stub.AttachAppCore(framework_pb2.AttachAppCoreRequest(address="10.0.0.5:31000"),
                               metadata=GOOD, timeout=5)
    assert reply.spec == framework.config.search
    assert [t.number for t in reply.trials] == [1]
    assert reply.trials[0].assignment["act"].text == "relu"
    assert reply.sequence == 1
    assert framework.controller.tasks.appcore_address() == "10.0.0.5:31000"
    for address in ("", "no-port"):
        code, details = code_of(stub.AttachAppCore,
                                framework_pb2.AttachAppCoreRequest(address=address))
        assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT, "address must be host:port")


def test_submit_trial_and_its_errors(stub: framework_pb2_grpc.FrameworkServiceStub,
                                     framework: Framework) -> None:
    trial = submit_one(stub, submit_request(1, priority=2))
    assert (trial.number, trial.state, trial.priority) == (1, common_pb2.PENDING, 2)
    assert framework.pending_calls == 1
    # A retry is idempotent.
    assert submit_one(stub, submit_request(1, priority=2)) == trial

    cases = [
        (submit_request(1, {**ASSIGN, "layers": 3}), grpc.StatusCode.ALREADY_EXISTS,
         "trial 1 already exists with another assignment"),
        (submit_request(0), grpc.StatusCode.INVALID_ARGUMENT,
         "trial number must be >= 1, got 0"),
        (submit_request(2, {"lr": 0.1}), grpc.StatusCode.INVALID_ARGUMENT,
         "assignment is missing parameter 'layers'"),
    ]
    unset = submit_request(2)
    unset.assignment["act"].Clear()  # a ParamValue with none of its oneof set
    cases.append((unset, grpc.StatusCode.INVALID_ARGUMENT,
                  "parameter 'act': a ParamValue must set one of real, integer or text; "
                  "none is set"))
    for request, code, details in cases:
        assert code_of(stub.SubmitTrials, batch(request)) == (code, details)

    submit_one(stub, submit_request(2))
    submit_one(stub, submit_request(3))
    assert code_of(stub.SubmitTrials, batch(submit_request(4))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "the trial budget of 3 is spent")
    assert [t.number for t in framework.controller.trials()] == [1, 2, 3]


def test_submit_trials_records_all_or_none(stub: framework_pb2_grpc.FrameworkServiceStub,
                                           framework: Framework) -> None:
    good = framework_pb2.SubmitTrialsRequest(trials=[submit_request(1), submit_request(2)])
    reply = stub.SubmitTrials(good, metadata=GOOD, timeout=5)
    assert [(t.number, t.state) for t in reply.trials] == [(1, common_pb2.PENDING),
                                                           (2, common_pb2.PENDING)]
    assert framework.pending_calls == 1
    assert stub.SubmitTrials(good, metadata=GOOD, timeout=5) == reply  # a retry
    bad = framework_pb2.SubmitTrialsRequest(trials=[submit_request(3), submit_request(4)])
    assert code_of(stub.SubmitTrials, bad) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "2 new trials would exceed the trial budget of 3 (2 recorded)")
    unset = submit_request(3)
    unset.assignment["act"].Clear()
    assert code_of(stub.SubmitTrials, framework_pb2.SubmitTrialsRequest(trials=[unset])) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "parameter 'act': a ParamValue must set one of real, integer or text; none is set")
    assert code_of(stub.SubmitTrials, framework_pb2.SubmitTrialsRequest()) == (
        grpc.StatusCode.INVALID_ARGUMENT, "no trials to submit")
    assert code_of(stub.SubmitTrials, good, metadata=()) == (
        grpc.StatusCode.UNAUTHENTICATED, "missing or wrong job token")
    assert [t.number for t in framework.controller.trials()] == [1, 2]


def test_record_report_and_its_errors(stub: framework_pb2_grpc.FrameworkServiceStub,
                                      framework: Framework) -> None:
    submit_one(stub, submit_request(1))

    def report(number: int, final: bool = False, step: int | None = None,
               **metrics: float) -> common_pb2.Report:
        request = common_pb2.Report(
            trial_number=number, final=final, elapsed_seconds=2.0,
            metrics=[common_pb2.Metric(name=k, value=v) for k, v in metrics.items()])
        if step is not None:
            request.step = step
        return request

    trial = stub.RecordReport(report(1, step=0, accuracy=0.5), metadata=GOOD, timeout=5).trial
    assert trial.objective == 0.5 and trial.training_seconds == 2.0
    assert framework.store.reports(1)[0]["step"] == 0
    assert code_of(stub.RecordReport, report(7, accuracy=0.5)) == (
        grpc.StatusCode.NOT_FOUND, "trial 7 does not exist")
    assert code_of(stub.RecordReport, report(1)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "a report needs at least one metric, e.g. accuracy=0.93")
    assert code_of(stub.RecordReport, report(1, accuracy=float("nan"))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "metric 'accuracy' must be finite, got nan")
    stub.RecordReport(report(1, final=True, accuracy=0.75), metadata=GOOD, timeout=5)
    assert framework.store.reports(1)[-1]["step"] is None  # no step sent: none recorded
    assert code_of(stub.RecordReport, report(1, accuracy=0.9)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "trial 1 already reported its final result")


def test_finish_job(stub: framework_pb2_grpc.FrameworkServiceStub, framework: Framework) -> None:
    assert code_of(stub.FinishJob, framework_pb2.FinishJobRequest(message="x")) == (
        grpc.StatusCode.INVALID_ARGUMENT, "outcome must be set")
    assert framework.controller.outcome is None
    submit_one(stub, submit_request(1))
    stub.FinishJob(framework_pb2.FinishJobRequest(outcome=framework_pb2.SPACE_EXHAUSTED,
                                                  message="the grid is done"),
                   metadata=GOOD, timeout=5)
    assert framework.controller.outcome == (framework_pb2.SPACE_EXHAUSTED, "the grid is done")
    assert framework.store.get_meta(meta.OUTCOME) == "SPACE_EXHAUSTED"
    assert code_of(stub.SubmitTrials, batch(submit_request(2))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "the job has ended; no trial can be submitted")
    # A report after the end is ABORTED (AppCore tells its runner to stop), not recorded.
    assert code_of(stub.RecordReport, common_pb2.Report(
        trial_number=1, metrics=[common_pb2.Metric(name="accuracy", value=0.9)], final=True,
    )) == (grpc.StatusCode.ABORTED, "the job has ended; trial 1's report is not recorded")
    assert framework.store.reports(1) == []
    assert code_of(stub.AttachAppCore, framework_pb2.AttachAppCoreRequest(address="h:1")) == (
        grpc.StatusCode.FAILED_PRECONDITION, "the job has ended")


def test_watch_trials_streams_events_and_ends_with_the_job(
        stub: framework_pb2_grpc.FrameworkServiceStub, framework: Framework) -> None:
    submit_one(stub, submit_request(1))
    received: list[framework_pb2.TrialEvent] = []
    errors: list[BaseException] = []

    def watch(after: int) -> None:
        try:
            for event in stub.WatchTrials(framework_pb2.WatchTrialsRequest(after_sequence=after),
                                          metadata=GOOD, timeout=10):
                received.append(event)
        except BaseException as err:  # noqa: BLE001 - checked below
            errors.append(err)

    watcher = threading.Thread(target=watch, args=(0,))
    watcher.start()
    submit_one(stub, submit_request(2, {**ASSIGN, "layers": 4}))
    framework.launch_trials()  # trial 1 and 2: LAUNCHING then RUNNING
    stub.FinishJob(framework_pb2.FinishJobRequest(outcome=framework_pb2.STOPPED, message="s"),
                   metadata=GOOD, timeout=5)
    watcher.join(10)
    assert not watcher.is_alive(), "the stream did not end with the job"
    assert errors == []
    assert [e.sequence for e in received] == [1, 2, 3, 4, 5, 6]
    assert [e.trial.number for e in received] == [1, 2, 1, 1, 2, 2]
    assert received[-1].trial.state == common_pb2.RUNNING

    # Watching an ended job from a sequence sends what follows it, then ends.
    late = list(stub.WatchTrials(framework_pb2.WatchTrialsRequest(after_sequence=4),
                                 metadata=GOOD, timeout=10))
    assert [e.sequence for e in late] == [5, 6]


def test_resolve_appcore_needs_the_trial_token(stub: framework_pb2_grpc.FrameworkServiceStub,
                                               framework: Framework) -> None:
    request = framework_pb2.ResolveAppCoreRequest(trial_number=3)
    for metadata in [(), GOOD, trial_metadata(trial_token(JOB_TOKEN, 4)),
                     trial_metadata(trial_token("another-job", 3))]:
        assert code_of(stub.ResolveAppCore, request, metadata) == (
            grpc.StatusCode.UNAUTHENTICATED, "missing or wrong trial token")
    mine = trial_metadata(trial_token(JOB_TOKEN, 3))
    assert stub.ResolveAppCore(request, metadata=mine, timeout=5).address == ""  # not attached
    stub.AttachAppCore(framework_pb2.AttachAppCoreRequest(address="agent2:31007"),
                       metadata=GOOD, timeout=5)
    assert stub.ResolveAppCore(request, metadata=mine, timeout=5).address == "agent2:31007"


def test_an_unexpected_error_is_internal_not_a_crash(tmp_path: Path) -> None:
    """A bug in the controller reaches AppCore as UNKNOWN and the server keeps serving."""

    class Broken(JobController):
        def record_report(self, *args: Any, **kwargs: Any) -> common_pb2.Trial:
            raise ZeroDivisionError("bug")

    framework = Framework(tmp_path, job_config())
    try:
        broken = Broken(framework.config, framework.store, JOB_TOKEN)
        server, port = make_server(broken, host="127.0.0.1", port=0)
        server.start()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = framework_pb2_grpc.FrameworkServiceStub(channel)
            code, _ = code_of(stub.RecordReport, common_pb2.Report(
                trial_number=1, metrics=[common_pb2.Metric(name="a", value=1.0)]))
            assert code == grpc.StatusCode.UNKNOWN
            assert stub.ResolveAppCore(framework_pb2.ResolveAppCoreRequest(trial_number=1),
                                       metadata=trial_metadata(trial_token(JOB_TOKEN, 1)),
                                       timeout=5).address == ""
        server.stop(None)
    finally:
        framework.close()
