"""``da-submit``: submit a hyperparameter-search job to a Mesos cluster (or the embedded one).

    da-submit --app-name mnist --files train.py --app-runner-launch-cmd "python train.py" \\
      --app-runner-cpus 4 --app-runner-memory 5G --app-core-cpus 1 --app-core-memory 1G \\
      --trail-steps 200 --tuning-type random-search --tuning-parameters params.json

Everything is validated before the cluster is touched. The job runs in this process (the
framework is here); a progress line shows while it runs, a table of trials at the end, and the
results are written to ``$DISAUTO_HOME/jobs/<job-id>/results.{json,csv}``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import logging
import math
import os
from pathlib import Path
import re
import secrets
import signal
import sys
import time
from types import FrameType
from typing import IO
from typing import Any

from appcore.algorithms import ALGORITHMS
from appcore.algorithms import algorithm_class
from common.durations import DurationError
from common.durations import parse_duration
from common.errors import SearchInputError
from common.resources import ResourceError
from common.resources import parse_size_mb
from common.space import space_to_proto
from framework.capacity import describe
from framework.policies import POLICIES
from framework.spec import InputSpec
from framework.spec import JobConfig
from framework.spec import OutputSpec
from framework.spec import TaskResources
from protos import common_pb2
from protos import framework_pb2
from submit.errors import DisAutoUsageError
from submit.exit_status import ExitStatus
from submit.exit_status import for_outcome
from submit.params import load_parameter_file


logger = logging.getLogger(__name__)

PROG = "da-submit"
MAX_SEED = 2**32 - 1
"""The largest --seed: the search libraries seed NumPy generators, which take 32 bits."""


class UsageError(DisAutoUsageError):
    """A flag is wrong; the message names it and what would be valid."""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors become UsageError
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog=PROG,
        description="Run a hyperparameter search of a training script on Mesos.",
        epilog="Docs: README.md. Results: $DISAUTO_HOME/jobs/<job-id>/ (default ~/.disauto).",
    )
    job = parser.add_argument_group("the job (the paper's Fig. 3 flags)")
    job.add_argument("--app-name", required=True, help="the job's name (the Mesos framework name)")
    job.add_argument("--input", action="append", default=[], metavar="SRC#NAME",
                     help="data at SRC (file, folder or URL) appears as NAME in each sandbox; "
                          "repeatable")
    job.add_argument("--output", metavar="DST#NAME",
                     help="trials write NAME under DST/trial-NNNN (apprunner_sdk.output_path()); "
                          "the best trial's NAME is copied to DST/NAME. DST must be reachable by "
                          "the agents (a shared file system on a real cluster)")
    job.add_argument("--files", action="append", default=[], metavar="FILE[,FILE...]",
                     help="the user's files, shipped to every task; repeatable")
    job.add_argument("--app-runner-launch-cmd", required=True, metavar="CMD",
                     help='the command each trial runs in its sandbox, e.g. "python train.py"')
    job.add_argument("--app-runner-memory", default="1G", metavar="SIZE",
                     help="memory per trial (e.g. 512M, 5G; default 1G)")
    job.add_argument("--app-runner-cpus", default="1", metavar="N", help="CPUs per trial")
    job.add_argument("--app-runner-gpus", default="0", metavar="N", help="GPUs per trial")
    job.add_argument("--app-core-memory", default="512M", metavar="SIZE",
                     help="memory of the AppCore task (default 512M)")
    job.add_argument("--app-core-cpus", default="0.5", metavar="N",
                     help="CPUs of the AppCore task (default 0.5)")
    job.add_argument("--trail-steps", "--trial-steps", dest="trial_steps", default="20",
                     metavar="N", help="the trial budget (default 20)")
    job.add_argument("--tuning-type", default="random-search",
                     help=f"the search algorithm: {', '.join(sorted(ALGORITHMS))}")
    job.add_argument("--tuning-parameters", required=True, metavar="FILE",
                     help='the parameter file ({"parameters": [{"name", "type", "value"}]})')
    job.add_argument("--tuning-setting", action="append", default=[], metavar="KEY=VALUE",
                     help="an algorithm setting, e.g. grid_points_per_range=4; repeatable")

    search = parser.add_argument_group("the search")
    search.add_argument("--parallelism", default="1", metavar="N",
                        help="trials in flight at once (default 1)")
    search.add_argument("--objective", default="accuracy", metavar="METRIC",
                        help="the reported metric to optimize (default accuracy)")
    search.add_argument("--direction", default="maximize", choices=("maximize", "minimize"))
    search.add_argument("--target", metavar="VALUE",
                        help="stop as soon as a trial's final objective reaches VALUE")
    search.add_argument("--max-duration", metavar="DURATION",
                        help="end the job after this long (e.g. 2h, 90m, 1h30m): running trials "
                             "are killed, the record kept")
    search.add_argument("--max-failed-trials", default="3", metavar="N",
                        help="stop the job when more than N trials fail (default 3)")
    search.add_argument("--seed", metavar="N",
                        help="seed of the search (default: random, printed)")
    search.add_argument("--bayes-backend", metavar="NAME",
                        help="with --tuning-type bayesian: tpe (Optuna, default), gp "
                             "(scikit-optimize), qmc (Optuna)")
    search.add_argument("--bayes-mode", metavar="MODE",
                        help="with --tuning-type bayesian: async (default: suggest when a slot "
                             "frees) or sync (batches of --parallelism)")
    search.add_argument("--warm-start", metavar="FILE",
                        help="with --tuning-type bayesian: an earlier job's results.json (its "
                             "results teach the model) or a JSON list of points to run first")
    search.add_argument("--early-stopping", default="none", metavar="RULE",
                        help="stop unpromising trials on their step reports: none (default), "
                             "median, asha")
    search.add_argument("--early-stopping-setting", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a setting of the early-stopping rule, e.g. min_resource=1; "
                             "repeatable (README)")

    cluster = parser.add_argument_group("the cluster")
    cluster.add_argument("--master", default="local",
                         help="local (boot the embedded cluster, default), host:port, or "
                              "zk://host:port/mesos")
    cluster.add_argument("--principal", help="Mesos principal (HTTP basic auth)")
    cluster.add_argument("--secret-file", metavar="FILE",
                         help="file holding the principal's secret")
    cluster.add_argument("--offer-policy", default="fifo", help=f"one of {', '.join(POLICIES)}")
    cluster.add_argument("--priority-setting", action="append", default=[], metavar="KEY=VALUE",
                         help="a setting of the dynamic priority strategy (--offer-policy "
                              "dynamic or dynamic-plus), e.g. thresholds=0.01,0.005 or "
                              "declines_per_level=2; repeatable (docs/dynamic-priority.md)")
    cluster.add_argument("--advertise-host", metavar="HOST",
                         help="how tasks reach this machine (default: derived from --master)")
    cluster.add_argument("--app-core-command", metavar="CMD",
                         help="how agents start AppCore (default: this Python's "
                              "`-m appcore` locally, `python3 -m appcore` on a real cluster)")
    cluster.add_argument("--local-agents", default="1", metavar="N",
                         help="agents of the embedded cluster with --master local (default 1)")

    containers = parser.add_argument_group("containers (README: Docker)")
    containers.add_argument("--docker-image", metavar="IMAGE",
                            help="run every trial in a container of IMAGE (it needs Python and "
                                 "apprunner_sdk; deploy/mesos builds one)")
    containers.add_argument("--app-core-docker-image", metavar="IMAGE",
                            help="run AppCore in a container of IMAGE (it needs all of DisAuto; "
                                 "the deploy/mesos apprunner image has it)")
    containers.add_argument("--containerizer", metavar="mesos|docker",
                            help="how Mesos runs the images: mesos (default; the Mesos "
                                 "containerizer with a Docker image, the only one with GPUs) or "
                                 "docker (the Docker containerizer)")

    out = parser.add_argument_group("output")
    out.add_argument("--quiet", action="store_true", help="no progress line")
    out.add_argument("--debug", action="store_true", help="debug logs and full tracebacks")
    return parser


# -- validation -------------------------------------------------------------------------------


def _positive_number(flag: str, text: str, *, integer: bool = False, zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    ok = value == value and value != float("inf") and (value >= 0 if zero else value > 0)
    if ok and integer and value != int(value):
        ok = False
    if not ok:
        kind = "an integer" if integer else "a number"
        bound = ">= 0" if zero else "> 0"
        raise UsageError(f"{flag}: invalid value {text!r}: expected {kind} {bound}")
    return value


def _size(flag: str, text: str) -> float:
    try:
        return parse_size_mb(text, what=flag)
    except ResourceError as err:
        raise UsageError(str(err)) from None


def _pair(flag: str, text: str) -> tuple[str, str]:
    source, sep, name = text.rpartition("#")
    if not sep or not source or not name:
        raise UsageError(
            f"{flag}: invalid value {text!r}: expected SRC#NAME, e.g. /data/mnist#data")
    if "/" in name or name in (".", ".."):
        raise UsageError(f"{flag}: invalid NAME {name!r} in {text!r}: must be a plain file name")
    return source, name


def _existing_file(flag: str, text: str) -> str:
    path = Path(text).expanduser()
    if not path.exists():
        raise UsageError(f"{flag}: {text}: no such file")
    if not path.is_file():
        raise UsageError(f"{flag}: {text}: not a regular file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{flag}: {text}: not readable")
    return str(path.resolve())


def _priority_settings(policy: str, items: Sequence[str]) -> dict[str, str]:
    """``--priority-setting`` items, checked against AppCore's and the offer policy's names."""
    from appcore.priority import SETTINGS as APPCORE_SETTINGS
    from appcore.priority import parse_priority_settings

    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--priority-setting: invalid value {item!r}: expected KEY=VALUE")
        settings[key.strip()] = value.strip()
    cls = POLICIES[policy]
    if settings and not cls.uses_priority:
        raise UsageError(f"--priority-setting: offer policy {policy!r} uses no priorities; "
                         "use --offer-policy dynamic or dynamic-plus")
    try:
        parse_priority_settings(settings)
        cls.parse_settings(settings, others=frozenset(APPCORE_SETTINGS))
    except ValueError as err:
        raise UsageError(f"--priority-setting: {err}") from None
    return settings


def _on_this_host(master: str) -> bool:
    """Whether the master's agents run on this machine: ``local``, or a loopback ``da-cluster``."""
    host = master.split("://", 1)[-1].split("/", 1)[0].split(",", 1)[0].rpartition(":")[0]
    return master == "local" or host in ("127.0.0.1", "localhost", "[::1]")


def _job_id(app_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", app_name).strip("-")[:40] or "job"
    return f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def _containers(args: argparse.Namespace, gpus: int) -> tuple[str, str, str]:
    """``(--docker-image, --app-core-docker-image, --containerizer)``, checked together."""
    from framework.containers import DEFAULT_CONTAINERIZER
    from framework.containers import ContainerConfigError
    from framework.containers import check_container_flags

    docker_image = args.docker_image if args.docker_image is not None else ""
    appcore_image = args.app_core_docker_image if args.app_core_docker_image is not None else ""
    for flag, value in (("--docker-image", args.docker_image),
                        ("--app-core-docker-image", args.app_core_docker_image)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag}: must name an image, e.g. disauto/apprunner:latest")
    if args.containerizer is not None and not (docker_image or appcore_image):
        raise UsageError("--containerizer: only means something with --docker-image or "
                         "--app-core-docker-image")
    containerizer = args.containerizer or DEFAULT_CONTAINERIZER
    try:
        check_container_flags(docker_image, containerizer, gpus)
        check_container_flags(appcore_image, containerizer, 0,
                              image_flag="--app-core-docker-image")
    except ContainerConfigError as err:
        raise UsageError(str(err)) from None
    return docker_image, appcore_image, containerizer


def disauto_home() -> Path:
    return Path(os.environ.get("DISAUTO_HOME") or Path.home() / ".disauto").expanduser()


@dataclass(frozen=True)
class Submission:
    """A validated job and how to run it."""

    config: JobConfig
    master: str
    principal: str | None
    secret: str | None
    offer_policy: str
    advertise_host: str | None
    local_agents: int
    quiet: bool
    debug: bool
    notes: tuple[str, ...] = ()
    """Lines for the user about what was made of the flags (printed when the job starts)."""


def _bayesian_settings(args: argparse.Namespace) -> dict[str, str]:
    """``--bayes-backend``, ``--bayes-mode`` and ``--warm-start`` as algorithm settings."""
    import json

    from appcore.algorithms.bayesian import BACKENDS
    from appcore.algorithms.bayesian import MODES
    from appcore.algorithms.bayesian import warm_start_setting

    given = [flag for flag, value in (("--bayes-backend", args.bayes_backend),
                                      ("--bayes-mode", args.bayes_mode),
                                      ("--warm-start", args.warm_start)) if value is not None]
    if given and args.tuning_type != "bayesian":
        raise UsageError(f"{given[0]}: needs --tuning-type bayesian "
                         f"(got --tuning-type {args.tuning_type})")
    settings: dict[str, str] = {}
    if args.bayes_backend is not None:
        if args.bayes_backend not in BACKENDS:
            raise UsageError(f"--bayes-backend: unknown backend {args.bayes_backend!r}; valid: "
                             f"{', '.join(BACKENDS)}")
        settings["backend"] = args.bayes_backend
    if args.bayes_mode is not None:
        if args.bayes_mode not in MODES:
            raise UsageError(f"--bayes-mode: unknown mode {args.bayes_mode!r}; valid: "
                             f"{', '.join(MODES)}")
        settings["mode"] = args.bayes_mode
    if args.warm_start is not None:
        path = _existing_file("--warm-start", args.warm_start)
        try:
            data = json.loads(Path(path).read_text())
            settings["warm_start"] = warm_start_setting(data, args.objective.strip(),
                                                        args.direction)
        except (ValueError, UnicodeDecodeError) as err:
            raise UsageError(f"--warm-start: {args.warm_start}: {err}") from None
    return settings


def _early_stopping(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """``--early-stopping`` and its ``--early-stopping-setting`` items, checked."""
    from appcore.pruners import pruner_class

    settings: dict[str, str] = {}
    for item in args.early_stopping_setting:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--early-stopping-setting: invalid value {item!r}: expected KEY=VALUE")
        settings[key.strip()] = value.strip()
    try:
        pruner_class(args.early_stopping).parse_settings(settings)
    except SearchInputError as err:
        flag = "--early-stopping-setting" if settings and "unknown early" not in str(err) \
            else "--early-stopping"
        raise UsageError(f"{flag}: {err}") from None
    return args.early_stopping, settings


def validate(args: argparse.Namespace) -> Submission:
    """Turn parsed flags into a Submission, or raise UsageError/ParameterFileError."""
    if not args.app_name.strip():
        raise UsageError("--app-name: must not be empty")
    if not args.app_runner_launch_cmd.strip():
        raise UsageError("--app-runner-launch-cmd: must not be empty")
    runner = TaskResources(
        cpus=_positive_number("--app-runner-cpus", args.app_runner_cpus),
        mem_mb=_size("--app-runner-memory", args.app_runner_memory),
        gpus=int(_positive_number("--app-runner-gpus", args.app_runner_gpus, integer=True,
                                  zero=True)),
    )
    appcore = TaskResources(
        cpus=_positive_number("--app-core-cpus", args.app_core_cpus),
        mem_mb=_size("--app-core-memory", args.app_core_memory),
    )
    trial_steps = int(_positive_number("--trail-steps", args.trial_steps, integer=True))
    parallelism = int(_positive_number("--parallelism", args.parallelism, integer=True))
    max_failed = int(_positive_number("--max-failed-trials", args.max_failed_trials,
                                      integer=True, zero=True))
    local_agents = int(_positive_number("--local-agents", args.local_agents, integer=True))
    if args.tuning_type not in ALGORITHMS:
        raise UsageError(f"--tuning-type: unknown algorithm {args.tuning_type!r}; valid: "
                         f"{', '.join(sorted(ALGORITHMS))}")
    if args.offer_policy not in POLICIES:
        raise UsageError(f"--offer-policy: unknown policy {args.offer_policy!r}; valid: "
                         f"{', '.join(sorted(POLICIES))}")
    priority_settings = _priority_settings(args.offer_policy, args.priority_setting)
    if not args.objective.strip():
        raise UsageError("--objective: must name a metric, e.g. accuracy")
    target: float | None = None
    if args.target is not None:
        try:
            target = float(args.target)
        except ValueError:
            raise UsageError(
                f"--target: invalid value {args.target!r}: expected a number") from None
        if not math.isfinite(target):
            raise UsageError(f"--target: invalid value {args.target!r}: expected a finite "
                             "number (a trial can never reach it)")
    if args.seed is None:
        seed = secrets.randbelow(2**31)
    else:
        try:
            seed = int(args.seed)
        except ValueError:
            raise UsageError(f"--seed: invalid value {args.seed!r}: expected an integer") from None
        if not 0 <= seed <= MAX_SEED:
            raise UsageError(f"--seed: invalid value {args.seed!r}: expected an integer from 0 "
                             f"to {MAX_SEED}")
    max_duration = 0.0
    if args.max_duration is not None:
        try:
            max_duration = parse_duration(args.max_duration)
        except DurationError as err:
            raise UsageError(f"--max-duration: {err}") from None
    settings: dict[str, str] = {}
    for item in args.tuning_setting:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--tuning-setting: invalid value {item!r}: expected KEY=VALUE")
        settings[key.strip()] = value.strip()

    files: list[str] = []
    for group in args.files:
        for item in filter(None, (p.strip() for p in group.split(","))):
            files.append(_existing_file("--files", item))
    names = [Path(f).name for f in files]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"--files: two files are named {duplicates[0]!r}; sandbox names must "
                         "be unique")
    inputs = []
    for item in args.input:
        source, name = _pair("--input", item)
        if "://" not in source:
            path = Path(source).expanduser()
            if not path.exists():
                raise UsageError(f"--input: {source}: no such file or folder")
            source = str(path.resolve())
        if name in names or any(i.name == name for i in inputs):
            raise UsageError(f"--input {item}: the sandbox already has a {name!r} (from --files "
                             "or another --input); NAMEs must be unique")
        inputs.append(InputSpec(source, name))
    output = None
    if args.output:
        destination, name = _pair("--output", args.output)
        dest = Path(destination).expanduser()
        if dest.exists() and not dest.is_dir():
            raise UsageError(f"--output: {destination}: exists and is not a folder")
        output = OutputSpec(str(dest.resolve()), name)

    params_file = Path(args.tuning_parameters).expanduser()
    space = load_parameter_file(params_file)
    settings.update(_bayesian_settings(args))
    early_stopping, early_stopping_settings = _early_stopping(args)
    try:
        algorithm_class(args.tuning_type).validate(space, settings, trial_steps)
    except SearchInputError as err:
        raise UsageError(f"--tuning-type {args.tuning_type}: {err}") from None

    search = common_pb2.JobSpec(
        app_name=args.app_name,
        space=space_to_proto(space),
        tuning_type=args.tuning_type,
        max_trials=trial_steps,
        parallelism=parallelism,
        objective=args.objective.strip(),
        direction=common_pb2.MINIMIZE if args.direction == "minimize" else common_pb2.MAXIMIZE,
        max_failed_trials=max_failed,
        seed=seed,
        settings=settings,
        early_stopping=early_stopping,
        early_stopping_settings=early_stopping_settings,
    )
    if target is not None:
        search.target = target
    search.dynamic_priority = POLICIES[args.offer_policy].uses_priority
    search.priority_settings.update(priority_settings)
    local = args.master == "local"
    # A loopback master (da-cluster on this machine) runs tasks here: use this Python for them.
    same_host = _on_this_host(args.master)
    docker_image, appcore_image, containerizer = _containers(args, runner.gpus)
    appcore_command = args.app_core_command or (
        f"{sys.executable} -m appcore" if same_host and not appcore_image
        else "python3 -m appcore")
    job_id = _job_id(args.app_name)
    search.job_id = job_id
    secret = None
    if args.secret_file:
        secret = Path(_existing_file("--secret-file", args.secret_file)).read_text().strip()
    if args.principal and secret is None:
        raise UsageError("--principal needs --secret-file")
    config = JobConfig(
        job_id=job_id,
        app_name=args.app_name,
        launch_cmd=args.app_runner_launch_cmd,
        runner=runner,
        appcore=appcore,
        search=search,
        files=tuple(files),
        inputs=tuple(inputs),
        output=output,
        appcore_command=appcore_command,
        extra_env={"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        if same_host else {},
        docker_image=docker_image,
        appcore_docker_image=appcore_image,
        max_duration=max_duration,
        offer_policy_settings={key: value for key, value in priority_settings.items()
                               if key in POLICIES[args.offer_policy].SETTINGS},
        containerizer=containerizer,
    )
    if local:
        from submit.local import LocalClusterError
        from submit.local import check_local_docker
        from submit.local import check_local_gpus

        try:
            check_local_gpus(config)
            check_local_docker(config)
        except LocalClusterError as err:
            raise UsageError(str(err)) from None
    return Submission(config, args.master, args.principal, secret, args.offer_policy,
                      args.advertise_host, local_agents, args.quiet, args.debug,
                      notes=_warm_start_notes(args.warm_start, settings, search.objective))


def _warm_start_notes(path: str | None, settings: dict[str, str],
                      objective: str) -> tuple[str, ...]:
    """What ``--warm-start`` gives the search, in one line."""
    import json

    if path is None or "warm_start" not in settings:
        return ()
    data = json.loads(settings["warm_start"])
    known, points = len(data["known"]), len(data["points"])
    if points:
        return (f"--warm-start {path}: {points} points are evaluated first",)
    if known:
        return (f"--warm-start {path}: {known} completed trials are told to the model",)
    return (f"--warm-start {path}: no completed trial with a {objective!r} value, so the "
            "search starts from nothing",)


# -- running ----------------------------------------------------------------------------------


def _configure_logging(debug: bool, log_file: Path | None) -> None:
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if log_file is not None:
        handler = logging.FileHandler(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    if debug:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(console)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(submission: Submission, out: IO[str], err: IO[str]) -> ExitStatus:
    """Run a validated job to its end and report it."""
    from framework.runtime import JobRunner  # imports pymesos (main thread)
    from framework.runtime import MasterEndpoint
    from framework.runtime import MasterUnreachableError
    from submit.local import oversubscription_note
    from submit.local import start_local_cluster

    config = submission.config
    job_dir = disauto_home() / "jobs" / config.job_id
    job_dir.mkdir(parents=True, exist_ok=True)
    _configure_logging(submission.debug, job_dir / "da-submit.log")
    maximize = config.search.direction != common_pb2.MINIMIZE
    objective = config.search.objective
    print(f"{PROG}: job {config.job_id} ({config.search.tuning_type}, "
          f"{config.search.max_trials} trials, parallelism {config.search.parallelism}, "
          f"seed {config.search.seed})", file=out)
    print(f"{PROG}: job folder {job_dir}", file=out)
    for note in submission.notes:
        print(f"{PROG}: note: {note}", file=err)

    cluster = None
    runner: JobRunner | None = None
    status = ExitStatus.ERROR
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        master = submission.master
        if master == "local":
            note = oversubscription_note(config, submission.local_agents)
            if note:
                print(f"{PROG}: note: {note}", file=err)
            cluster = start_local_cluster(config, job_dir / "cluster", submission.local_agents)
            master = cluster.address
            print(f"{PROG}: embedded Mesos master at http://{master}/ (its web page lists "
                  "the tasks; it stops with the job)", file=out)
        runner = JobRunner(
            config, job_dir,
            MasterEndpoint(master, submission.principal, submission.secret),
            offer_policy=submission.offer_policy,
            advertise_host=submission.advertise_host,
        )
        try:
            runner.start()
        except MasterUnreachableError as error:
            print(f"{PROG}: error: {error}", file=err)
            return ExitStatus.MASTER_UNREACHABLE
        print(f"{PROG}: framework {runner.scheduler.framework_id} registered", file=out)
        show = _ProgressPrinter(out, objective, quiet=submission.quiet,
                                wants=describe(config.runner))
        runner.wait(poll=lambda: show(runner.controller.progress()))
        show.done()
        runner.stop(framework_pb2.STOPPED, "stopped")  # kills leftovers, tears down
        outcome, _ = runner.controller.outcome or (framework_pb2.ERROR, "unknown")
        status = for_outcome(outcome)
    except KeyboardInterrupt:
        print(f"\n{PROG}: stopping the job (killing its tasks)…", file=err)
        if runner is not None:
            runner.stop(framework_pb2.STOPPED, "stopped with Ctrl-C")
        status = ExitStatus.CTRL_C
    except Exception as error:
        # Whatever broke (e.g. the pymesos driver aborted), kill what runs and keep the record.
        if runner is not None:
            runner.stop(framework_pb2.ERROR, f"da-submit failed: {error}")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        try:
            if runner is not None:
                _report(runner, job_dir, out, err, objective, maximize, status)
        finally:
            if cluster is not None:
                cluster.stop()
    return status


class _ProgressPrinter:
    """A live progress line: rewritten in place on a terminal, a line per change otherwise."""

    def __init__(self, out: IO[str], objective: str, quiet: bool, wants: str = "") -> None:
        self._out = out
        self._objective = objective
        self._wants = wants
        self._quiet = quiet
        self._tty = bool(getattr(out, "isatty", lambda: False)())
        self._last = ""
        self._last_time = 0.0

    def __call__(self, progress: Any) -> None:
        if self._quiet:
            return
        from submit.results import progress_line

        line = progress_line(progress, self._objective, self._wants)
        core = line.split("] ", 1)[-1]
        if self._tty:
            self._out.write("\r" + line.ljust(len(self._last)))
            self._out.flush()
            self._last = line
        elif core != self._last or time.monotonic() - self._last_time > 30:
            print(line, file=self._out, flush=True)
            self._last = core
            self._last_time = time.monotonic()

    def done(self) -> None:
        if self._tty and not self._quiet and self._last:
            self._out.write("\n")


def _report(runner: Any, job_dir: Path, out: IO[str], err: IO[str], objective: str,
            maximize: bool, status: ExitStatus) -> None:
    from submit import results

    controller = runner.controller
    outcome = controller.outcome
    outcome_name = framework_pb2.JobOutcome.Name(outcome[0]) if outcome else "UNKNOWN"
    message = outcome[1] if outcome else ""
    trials = controller.trials()
    best = controller.best_trial()
    summary = {
        "job_id": runner.config.job_id,
        "app_name": runner.config.app_name,
        "outcome": outcome_name,
        "message": message,
        "exit_status": int(status),
        "objective": objective,
        "direction": "maximize" if maximize else "minimize",
        "seed": runner.config.search.seed,
        "best": None if best is None else {
            "trial": best.number, "objective": best.objective, "assignment": best.assignment,
        },
    }
    order = [p.name for p in runner.config.search.space.parameters]
    json_path, csv_path = results.write(job_dir, summary, trials, maximize, order)
    if outcome_name == "UNSCHEDULABLE":  # a request error: one line, as a bad flag gets
        print(f"{PROG}: error: {message}", file=err)
        return
    if trials:
        print("", file=out)
        print(results.table(trials, objective, maximize, param_order=order), file=out)
    print("", file=out)
    print(f"{PROG}: {outcome_name.lower().replace('_', ' ')}: {message}", file=out)
    if best is not None:
        params = ", ".join(f"{k}={v!r}" for k, v in best.assignment.items())
        print(f"{PROG}: best trial-{best.number:04d}: {objective}={best.objective:.6g} "
              f"with {params}", file=out)
    elif status != ExitStatus.CTRL_C:
        print(f"{PROG}: no trial produced a result", file=err)
    print(f"{PROG}: results in {json_path} and {csv_path}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """The da-submit console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        submission = validate(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        print(f"Try '{PROG} --help' for help.", file=sys.stderr)
        return ExitStatus.USAGE
    except DisAutoUsageError as error:  # the parameter file
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.USAGE
    try:
        return run(submission, sys.stdout, sys.stderr)
    except Exception as error:  # noqa: BLE001 - the one error funnel
        if debug:
            raise
        print(f"{PROG}: error: {error} (run with --debug for details)", file=sys.stderr)
        return ExitStatus.ERROR


if __name__ == "__main__":
    sys.exit(main())
