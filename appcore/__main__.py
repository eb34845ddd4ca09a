"""AppCore's entry point: ``python -m disauto.appcore`` inside its Mesos task.

It reads the framework's address, the job token and its port from the environment the framework
set, serves runners on that port, attaches to the framework, rebuilds its search from the
recorded trials, and runs the trial loop until the job ends.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import grpc

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.framework_client import FrameworkClient
from disauto.appcore.loop import TrialLoop
from disauto.appcore.servicer import AppCoreServicer
from disauto.appcore.servicer import make_server
from disauto.common import task_env
from disauto.common import tls
from disauto.common.certificates import Identity
from disauto.common.certificates import generate
from disauto.common.objectives import Objectives
from disauto.common.rendezvous import framework_address
from disauto.common.space import space_from_proto
from disauto.protos import framework_pb2


logger = logging.getLogger("appcore")

FRAMEWORK_WAIT = 600.0
"""Seconds AppCore waits for a framework that went away (``da-job resume`` brings it back, on
the same address where it is free, else on another that the master tells); runners' reports
meanwhile are answered UNAVAILABLE, which they retry for as long (``apprunner_sdk``)."""

_FRAMEWORK_GONE = frozenset({
    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL,
    # A call in flight when the framework's process died can end either way too.
    grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED,
})
"""How a call ends when the framework went away (killed, restarting): AppCore waits for it."""

LOOKUP_INTERVAL = 1.0
"""Seconds between two look-ups of the framework's address in the master while it is away (one
small GET of ``/master/frameworks`` a second: a resumed framework is found within a second of
its re-subscription)."""


def _require(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise SystemExit(f"appcore: error: {name} is not set (AppCore runs as a DisAuto task)")
    return value


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    framework_address = _require(task_env.FRAMEWORK_ADDR)
    token = _require(task_env.JOB_TOKEN)
    port = int(_require(task_env.APPCORE_PORT))
    host = os.environ.get(task_env.APPCORE_HOST) or "127.0.0.1"
    bind = os.environ.get(task_env.APPCORE_BIND) or host
    trust = tls.framework_trust(os.environ)
    framework = FrameworkClient(framework_address, token, trust=trust)
    framework.wait_ready()

    # Bind the port first so the address we announce is real; serve once the loop exists.
    servicer = AppCoreServicer(token)
    identity = _own_identity(host) if trust[0] else None
    try:
        server = make_server(servicer, bind, port,
                             tls=(identity.key_pem, identity.cert_pem) if identity else None)
    except OSError as err:
        print(f"appcore: error: {err}", file=sys.stderr)
        return task_env.EXIT_PORT_TAKEN
    certificate = identity.cert_pem.decode() if identity else ""
    try:
        return _serve(framework, servicer, server, f"{host}:{port}", certificate)
    finally:
        server.stop(grace=2).wait()


def wait_for_framework(framework: FrameworkClient, timeout: float = FRAMEWORK_WAIT,
                       interval: float = LOOKUP_INTERVAL) -> FrameworkClient:
    """Wait for a framework that went away; the client of where it answers again.

    Every ``interval`` seconds without an answer, the master is asked where the job's framework
    is now (a resumed framework may have another port): where to ask travels
    in the task environment's rendezvous variables (:mod:`common.rendezvous`).

    Raises:
        ConnectionError: it did not come back within ``timeout`` seconds.
    """
    master = os.environ.get(task_env.MASTER_ADDR, "")
    framework_id = os.environ.get(task_env.FRAMEWORK_ID, "")
    deadline = time.monotonic() + timeout
    while True:
        try:
            framework.wait_ready(timeout=min(interval, max(0.1, deadline - time.monotonic())))
            return framework
        except ConnectionError:
            if time.monotonic() >= deadline:
                framework.close()
                raise ConnectionError(
                    f"the framework did not come back within {timeout:.0f} s") from None
        moved = framework_address(master, framework_id)
        if moved and moved != framework.address:
            logger.info("the framework moved from %s to %s", framework.address, moved)
            framework = framework.moved_to(moved)


def _own_identity(host: str) -> Identity:
    """AppCore's own certificate for a job with TLS: made here, its key never leaves this
    process; the framework hands the certificate to runners."""
    return generate(tls.APPCORE_SERVER_NAME, hosts=(host,))


def _loop(framework: FrameworkClient, reply: framework_pb2.AttachAppCoreReply) -> TrialLoop:
    """The search the framework's attach reply describes, rebuilt from its recorded trials.

    Raises:
        ValueError: the search cannot run (the algorithm says why, in one line).
    """
    spec = reply.spec
    objectives = Objectives.from_spec(spec)
    algorithm = create_algorithm(
        spec.tuning_type,
        space_from_proto(spec.space),
        seed=spec.seed,
        direction=objectives.directions,
        settings=dict(spec.settings),
        parallelism=spec.parallelism,  # the algorithm refuses < 1 in one line
    )
    algorithm.restore(TrialLoop.records(list(reply.trials), objectives))
    return TrialLoop(framework, spec, algorithm, list(reply.trials))


def _serve(framework: FrameworkClient, servicer: AppCoreServicer, server: grpc.Server,
           address: str, certificate: str = "") -> int:
    """Attach, rebuild the search from the record, run the loop; when the framework goes away
    (it died and ``da-job resume`` brings it back), wait for it and do it all again: the
    record is the state, so a rebuilt search continues where the old one was."""
    started = False
    while True:
        try:
            reply = framework.attach(address, certificate)
        except grpc.RpcError as err:
            if err.code() in _FRAMEWORK_GONE:  # gone again between its answer and ours
                try:
                    framework = wait_for_framework(framework)
                except ConnectionError as gone:
                    logger.error("the framework did not come back: %s", gone)
                    return 1
                continue
            framework.close()
            if err.code() == grpc.StatusCode.FAILED_PRECONDITION:  # the job ended meanwhile
                return 0
            raise
        try:
            loop = _loop(framework, reply)
        except ValueError as err:
            framework.finish(framework_pb2.ERROR, f"AppCore cannot run the search: {err}")
            framework.close()
            return 1
        servicer.set_loop(loop)
        if not started:
            server.start()
            started = True
        logger.info("AppCore serving runners on %s; %d trials recorded", address,
                    len(reply.trials))
        try:
            loop.run(reply.sequence)
            framework.close()
            return 0
        except grpc.RpcError as err:
            if err.code() not in _FRAMEWORK_GONE:
                logger.error("lost the framework: %s", err.details())
                framework.close()
                return 1
            logger.warning("lost the framework (%s); waiting up to %.0f s for it to come back",
                           err.details(), FRAMEWORK_WAIT)
            servicer.set_loop(None)  # runners' reports wait for it (UNAVAILABLE, retried)
        try:
            framework = wait_for_framework(framework)
        except ConnectionError as err:
            logger.error("the framework did not come back: %s", err)
            return 1


if __name__ == "__main__":
    sys.exit(main())
