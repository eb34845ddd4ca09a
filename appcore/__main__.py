"""AppCore's entry point: ``python -m disauto.appcore`` inside its Mesos task.

It reads the framework's address, the job token and its port from the environment the framework
set, serves runners on that port, attaches to the framework, rebuilds its search from the
recorded trials, and runs the trial loop until the job ends.
"""

from __future__ import annotations

import logging
import os
import sys

import grpc

from disauto.appcore.algorithms import create_algorithm
from disauto.appcore.framework_client import FrameworkClient
from disauto.appcore.loop import TrialLoop
from disauto.appcore.servicer import AppCoreServicer
from disauto.appcore.servicer import make_server
from disauto.common import task_env
from disauto.common.space import space_from_proto
from disauto.protos import common_pb2
from disauto.protos import framework_pb2


logger = logging.getLogger("appcore")


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
    framework = FrameworkClient(framework_address, token)
    framework.wait_ready()

    # Bind the port first so the address we announce is real; serve once the loop exists.
    servicer = AppCoreServicer(token)
    try:
        server = make_server(servicer, "0.0.0.0", port)
    except OSError as err:
        print(f"appcore: error: {err}", file=sys.stderr)
        return task_env.EXIT_PORT_TAKEN
    reply = framework.attach(f"{host}:{port}")
    spec = reply.spec
    try:
        algorithm = create_algorithm(
            spec.tuning_type,
            space_from_proto(spec.space),
            seed=spec.seed,
            direction="minimize" if spec.direction == common_pb2.MINIMIZE else "maximize",
            settings=dict(spec.settings),
            parallelism=max(1, spec.parallelism),
        )
        algorithm.restore(TrialLoop.records(list(reply.trials)))
        loop = TrialLoop(framework, spec, algorithm, list(reply.trials))
    except ValueError as err:
        framework.finish(framework_pb2.ERROR, f"AppCore cannot run the search: {err}")
        return 1
    servicer.set_loop(loop)
    server.start()
    logger.info("AppCore serving runners on %s:%d; %d trials recorded", host, port,
                len(reply.trials))
    try:
        loop.run(reply.sequence)
    except grpc.RpcError as err:
        logger.error("lost the framework: %s", err.details())
        return 1
    finally:
        server.stop(grace=2).wait()
        framework.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
