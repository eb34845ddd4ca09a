"""From parsed flags to a :class:`Submission`: every flag and file checked before the cluster is
touched, one area at a time (resources, the search, files, the offer policy, containers, the
cluster). Errors are one line (:class:`~submit.parser.UsageError`, or a parameter file's
:class:`~submit.errors.ParameterFileError`) and nothing is started or recorded.
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
import sys
import time
from typing import Any

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms import algorithm_class
from disauto.common.certificates import CertificateError
from disauto.common.certificates import Identity
from disauto.common.certificates import load
from disauto.common.deadlines import DeadlineError
from disauto.common.deadlines import parse_deadline
from disauto.common.durations import DurationError
from disauto.common.durations import parse_duration
from disauto.common.errors import SearchInputError
from disauto.common.objectives import Objectives
from disauto.common.slots import EXECUTOR_MODULE
from disauto.common.space import space_from_proto
from disauto.common.space import space_to_proto
from disauto.framework.policies import POLICIES
from disauto.framework.record import DEFAULT_MASTER_TIMEOUT
from disauto.framework.record import DEFAULT_TRIAL_EXIT_GRACE
from disauto.framework.record import DEFAULT_UNREACHABLE_TIMEOUT
from disauto.framework.record import InputSpec
from disauto.framework.record import JobConfig
from disauto.framework.record import OutputSpec
from disauto.framework.record import TaskResources
from disauto.protos import common_pb2
from disauto.submit.params import load_parameter_file
from disauto.submit.parser import POLICY_SETTING
from disauto.submit.parser import UsageError
from disauto.submit.slot_choice import SlotChoice
from disauto.submit.slot_choice import choose_slots
from disauto.submit.suggest import nearest
from disauto.submit.values import existing_file
from disauto.submit.values import key_values
from disauto.submit.values import pair
from disauto.submit.values import positive_number
from disauto.submit.values import roles
from disauto.submit.values import size_bytes
from disauto.submit.values import size_mb
from disauto.submit.values import user_name


MAX_SEED = 2**32 - 1
MAX_TRIALS = 1_000_000
"""The largest --trail-steps (and --max-failed-trials): a job's record of a million trials is
already hundreds of MB."""
MAX_PARALLELISM = 10_000
MAX_LOCAL_AGENTS = 64
MAX_GPUS = 1024
MAX_TRIAL_RETRIES = 100
"""Bounds of the integer flags: each fits the fields it travels in and a machine's reach."""
"""The largest --seed: the search libraries seed NumPy generators, which take 32 bits."""

logger = logging.getLogger(__name__)


DIRECTIONS = ("maximize", "minimize")
"""What ``--direction`` takes, per objective."""


def _policy_settings(policy: str, items: Sequence[str], spellings: Sequence[str] = ()
                     ) -> dict[str, str]:
    """``--policy-setting`` items (or its alias ``--priority-setting``, as ``spellings`` says
    each was typed), checked against the offer policy's settings and, for a policy that reads
    trial priorities, AppCore's Algorithm 1 settings. Errors name the flag as typed."""
    from disauto.appcore.priority import SETTINGS as APPCORE_SETTINGS
    from disauto.appcore.priority import parse_priority_settings

    typed = [*spellings, *[POLICY_SETTING] * (len(items) - len(spellings))]
    flag = typed[0] if len(set(typed)) == 1 else POLICY_SETTING
    settings: dict[str, str] = {}
    for item, spelled in zip(items, typed, strict=False):
        settings.update(key_values(spelled, [item]))
    cls = POLICIES[policy]
    appcore = frozenset(APPCORE_SETTINGS) if cls.uses_priority else frozenset()
    if not cls.uses_priority and any(name in APPCORE_SETTINGS for name in settings):
        ranking = [name for name, other in POLICIES.items() if other.uses_priority]
        raise UsageError(f"{flag}: offer policy {policy!r} uses no priorities; use "
                         f"--offer-policy {' or '.join(ranking)}")
    try:
        parse_priority_settings(settings)
        cls.parse_settings(settings, others=appcore)
    except ValueError as err:
        raise UsageError(f"{flag}: {err}") from None
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
    from disauto.framework.run import DEFAULT_CONTAINERIZER
    from disauto.framework.run import ContainerConfigError
    from disauto.framework.run import check_container_flags

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
    detach: bool = False
    """Run in a background process and return at once (``--detach``)."""
    argv: tuple[str, ...] = ()
    """The flags as given (a detached job re-runs them in its own process)."""
    agent_principal: str | None = None
    """Who reads the agents' endpoints (``--agent-principal``, else ``--principal``)."""
    agent_secret: str | None = None
    bind_all: bool = False
    """Listen on every interface (``--bind-all``; a cluster only)."""
    tls: TlsChoice | None = None
    """TLS for the gRPC services; None: plain gRPC."""
    slot_line: str = ""
    """How the trials run and why, one line (``submit/slot_choice.py``)."""


@dataclass(frozen=True)
class TlsChoice:
    """``--tls`` (a self-signed certificate made when the job starts) or the user's checked
    ``--tls-cert``/``--tls-key`` pair."""

    identity: Identity | None = None
    """The user's pair; None: make a self-signed one."""


def _tls(args: argparse.Namespace) -> TlsChoice | None:
    """``--tls``, ``--tls-cert`` and ``--tls-key``, the files read and checked now."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if args.tls_cert:
        try:
            return TlsChoice(load(args.tls_cert, args.tls_key))
        except CertificateError as err:
            raise UsageError(str(err)) from None
    return TlsChoice() if args.tls else None


def _check_binding(args: argparse.Namespace) -> None:
    """``--bind-all`` is for clusters: everything local listens on loopback alone."""
    if args.bind_all and args.master == "local":
        raise UsageError("--bind-all: with --master local everything listens on 127.0.0.1 "
                         "only; it is for a cluster")


def _bayesian_settings(args: argparse.Namespace) -> dict[str, str]:
    """``--bayes-backend``, ``--bayes-mode`` and ``--warm-start`` as algorithm settings."""
    import json

    from disauto.appcore.algorithms.bayesian import BACKENDS
    from disauto.appcore.algorithms.bayesian import MODES
    from disauto.appcore.algorithms.bayesian import warm_start_setting

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
        path = existing_file("--warm-start", args.warm_start)
        objectives = _objectives(args)
        try:
            data = json.loads(Path(path).read_text())
            if objectives.several and not isinstance(data, list):
                raise ValueError("an earlier job's results teach one objective; a search of "
                                 f"{len(objectives.names)} can start from a list of points only")
            settings["warm_start"] = warm_start_setting(data, objectives.names[0],
                                                        objectives.directions[0])
        except (ValueError, UnicodeDecodeError) as err:
            raise UsageError(f"--warm-start: {args.warm_start}: {err}") from None
    return settings


def _early_stopping(args: argparse.Namespace,
                    objectives: Objectives) -> tuple[str, dict[str, str]]:
    """``--early-stopping`` and its ``--early-stopping-setting`` items, checked."""
    from disauto.appcore.pruners import pruner_class

    settings = key_values("--early-stopping-setting", args.early_stopping_setting)
    try:
        rule = pruner_class(args.early_stopping)
        rule.parse_settings(settings)
    except SearchInputError as err:
        flag = "--early-stopping-setting" if settings and "unknown early" not in str(err) \
            else "--early-stopping"
        raise UsageError(f"{flag}: {err}") from None
    if objectives.several and rule.NAME != "none":
        raise UsageError(f"--early-stopping {args.early_stopping}: a rule judges one objective's "
                         f"curve; a search of {len(objectives.names)} objectives "
                         f"({', '.join(objectives.names)}) cannot stop trials early")
    return args.early_stopping, settings


def _split(flag: str, text: str) -> list[str]:
    """A comma-separated flag's items, stripped; an empty one is an error."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise UsageError(f"{flag}: invalid value {text!r}: an empty item; separate the values "
                         "with single commas")
    return items


def _objectives(args: argparse.Namespace) -> Objectives:
    """``--objective``, ``--direction`` and ``--target``: one objective, or several with a
    direction each (and a target each, if any)."""
    if not args.objective.strip():
        raise UsageError("--objective: must name a metric, e.g. accuracy")
    names = _split("--objective", args.objective)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UsageError(f"--objective: {duplicates[0]!r} is named twice")
    several = len(names) > 1
    example = ",".join(("maximize", "minimize")[i % 2] for i in range(len(names)))
    if args.direction is None:
        if several:
            raise UsageError(f"--direction: {len(names)} objectives ({', '.join(names)}) need "
                             f"a direction each, e.g. --direction {example}")
        directions = ["maximize"]
    else:
        directions = _split("--direction", args.direction)
        for direction in directions:
            if direction not in DIRECTIONS:
                near = nearest(direction, DIRECTIONS)
                raise UsageError(f"--direction: invalid value {direction!r}: expected maximize "
                                 "or minimize" + (f" (did you mean {near}?)" if near else ""))
        if len(directions) != len(names):
            raise UsageError(f"--direction: {len(directions)} given for {len(names)} "
                             f"objective{'s' if several else ''} ({', '.join(names)}); give one "
                             f"per objective, e.g. --direction {example}")
    targets: list[float] = []
    if args.target is not None:
        targets = [_target(item) for item in _split("--target", args.target)]
        if len(targets) != len(names):
            raise UsageError(f"--target: {len(targets)} given for {len(names)} objective"
                             f"{'s' if several else ''} ({', '.join(names)}); give one per "
                             "objective (a trial must reach them all)")
    return Objectives(tuple(names), tuple(directions), tuple(targets))  # type: ignore[arg-type]


def validate(args: argparse.Namespace) -> Submission:
    """Turn parsed flags into a Submission, or raise UsageError/ParameterFileError."""
    if not args.app_name.strip():
        raise UsageError("--app-name: must not be empty")
    if not args.app_runner_launch_cmd.strip():
        raise UsageError("--app-runner-launch-cmd: must not be empty")
    runner, appcore = _resources(args)
    local_agents = int(positive_number("--local-agents", args.local_agents, integer=True,
                                       most=MAX_LOCAL_AGENTS))
    if args.offer_policy not in POLICIES:
        raise UsageError(f"--offer-policy: unknown policy {args.offer_policy!r}; valid: "
                         f"{', '.join(sorted(POLICIES))}")
    given = _policy_settings(args.offer_policy, args.policy_setting,
                             args.policy_setting_flags)
    times = _times(args)
    files, inputs = _files_and_inputs(args)
    output = _output(args.output)
    search = _search(args)
    search.dynamic_priority = POLICIES[args.offer_policy].uses_priority
    search.priority_settings.update(given)
    where, slots = _where(args, runner, files, inputs)
    search.job_id = args.job_id or _job_id(args.app_name)
    secret = _secret(args)
    agent_principal, agent_secret = _agent_credentials(args, secret)
    _check_binding(args)
    tls = _tls(args)
    config = JobConfig(
        job_id=search.job_id, app_name=args.app_name, launch_cmd=args.app_runner_launch_cmd,
        runner=runner, appcore=appcore, search=search, files=files, inputs=inputs,
        output=output, roles=roles(args.roles), user=user_name(args.user),
        offer_policy_settings={key: value for key, value in given.items()
                               if key in POLICIES[args.offer_policy].SETTINGS},
        telemetry_interval=_telemetry_interval(args.telemetry_interval),
        trial_retries=int(positive_number("--trial-retries", args.trial_retries, integer=True,
                                          zero=True, most=MAX_TRIAL_RETRIES)),
        **times, **where, **_checkpoints(args),
    )
    if args.master == "local":
        _check_local(config)
    return Submission(config, args.master, args.principal, secret, args.offer_policy,
                      args.advertise_host, local_agents, args.quiet, args.debug,
                      notes=(*search_notes(search),
                             *_warm_start_notes(args.warm_start, dict(search.settings),
                                                search.objective), *slots.notes),
                      detach=args.detach, bind_all=args.bind_all, tls=tls,
                      agent_principal=agent_principal, agent_secret=agent_secret,
                      slot_line=slots.line)


def _times(args: argparse.Namespace) -> dict[str, Any]:
    """The job's durations and deadline (JobConfig's fields of those names)."""
    return {
        "max_duration": _max_duration(args.max_duration, "--max-duration"),
        "trial_timeout": _max_duration(args.trial_timeout, "--trial-timeout"),
        "trial_exit_grace": _max_duration(args.trial_exit_grace, "--trial-exit-grace")
        or DEFAULT_TRIAL_EXIT_GRACE,
        "deadline": _deadline(args.deadline),
        "master_timeout": _max_duration(args.master_timeout, "--master-timeout")
        or DEFAULT_MASTER_TIMEOUT,
        "unreachable_timeout": _max_duration(args.unreachable_timeout,
                                             "--unreachable-timeout")
        or DEFAULT_UNREACHABLE_TIMEOUT,
    }


def _where(args: argparse.Namespace, runner: TaskResources, files: Sequence[str],
           inputs: Sequence[InputSpec]) -> tuple[dict[str, Any], SlotChoice]:
    """How and in what the tasks run: commands, images, containerizer, warm slots
    (JobConfig's fields of those names), and the slot mode chosen."""
    # A loopback master (da-cluster on this machine) runs tasks here: use this Python for them.
    same_host = _on_this_host(args.master)
    docker_image, appcore_image, containerizer = _containers(args, runner.gpus)
    slots = choose_slots(args, gpus=runner.gpus, docker_image=docker_image,
                         appcore_image=appcore_image, files=files, inputs=inputs)
    slot_idle = _max_duration(args.slot_idle, "--slot-idle") or 10.0
    python = sys.executable if same_host else "python3"
    return {
        "appcore_command": args.app_core_command or (
            f"{python} -m disauto.appcore" if not appcore_image
            else "python3 -m disauto.appcore"),
        "extra_env": {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        if same_host else {},
        "docker_image": docker_image, "appcore_docker_image": appcore_image,
        "containerizer": containerizer, "slot_mode": slots.mode, "slot_idle": slot_idle,
        "slot_preload": slots.preload, "slot_preload_auto": slots.auto,
        "slot_preload_optional": slots.optional,
        "executor_command": f"{python} -m {EXECUTOR_MODULE}",
    }, slots


def _agent_credentials(args: argparse.Namespace,
                       secret: str | None) -> tuple[str | None, str | None]:
    """Who reads the agents' HTTP endpoints: ``--agent-principal`` with
    ``--agent-secret-file``, by default the framework's ``--principal`` and its secret (Mesos
    operators usually give one principal both: a master's ``--credentials`` and the agents'
    ``--http_credentials`` list the same tenants)."""
    principal = args.agent_principal or args.principal
    if args.agent_principal and not args.agent_secret_file:
        raise UsageError("--agent-principal needs --agent-secret-file")
    if not args.agent_secret_file:
        return principal, secret
    if not principal:
        raise UsageError("--agent-secret-file needs --agent-principal (or --principal)")
    path = Path(existing_file("--agent-secret-file", args.agent_secret_file))
    return principal, path.read_text().strip()


def _secret(args: argparse.Namespace) -> str | None:
    """``--secret-file``'s secret, which ``--principal`` needs."""
    secret = None
    if args.secret_file:
        secret = Path(existing_file("--secret-file", args.secret_file)).read_text().strip()
    if args.principal and secret is None:
        raise UsageError("--principal needs --secret-file")
    return secret


def _resources(args: argparse.Namespace) -> tuple[TaskResources, TaskResources]:
    """What a trial and AppCore ask of an offer."""
    runner = TaskResources(
        cpus=positive_number("--app-runner-cpus", args.app_runner_cpus),
        mem_mb=size_mb("--app-runner-memory", args.app_runner_memory),
        gpus=int(positive_number("--app-runner-gpus", args.app_runner_gpus, integer=True,
                                 zero=True, most=MAX_GPUS)),
    )
    appcore = TaskResources(
        cpus=positive_number("--app-core-cpus", args.app_core_cpus),
        mem_mb=size_mb("--app-core-memory", args.app_core_memory),
    )
    return runner, appcore


def trial_steps_value(text: str) -> int:
    """``--trail-steps``: the trial budget (also ``da-job update``'s)."""
    return int(positive_number("--trail-steps", text, integer=True, most=MAX_TRIALS))


def parallelism_value(text: str) -> int:
    """``--parallelism``: trials in flight at once (also ``da-job update``'s)."""
    return int(positive_number("--parallelism", text, integer=True, most=MAX_PARALLELISM))


def check_budget_within_space(search: common_pb2.JobSpec, trial_steps: int) -> None:
    """Refuse a new budget (``da-job update``) beyond what the job's algorithm can ever issue:
    grid search's grid, as at submission (its space and settings do not change)."""
    try:
        size = algorithm_class(search.tuning_type).size(space_from_proto(search.space),
                                                         dict(search.settings))
    except SearchInputError as err:
        raise UsageError(f"--tuning-type {search.tuning_type}: {err}") from None
    if size is not None and trial_steps > size:
        raise UsageError(f"--trail-steps: invalid value {trial_steps}: {search.tuning_type} "
                         f"has {size} points to try; the largest valid budget is {size}")


def _search(args: argparse.Namespace) -> common_pb2.JobSpec:
    """The search AppCore runs: space, algorithm and its settings, budget, objective, seed."""
    trial_steps = trial_steps_value(args.trial_steps)
    parallelism = parallelism_value(args.parallelism)
    max_failed = int(positive_number("--max-failed-trials", args.max_failed_trials,
                                     integer=True, zero=True, most=MAX_TRIALS))
    if args.tuning_type not in ALGORITHMS:
        raise UsageError(f"--tuning-type: unknown algorithm {args.tuning_type!r}; valid: "
                         f"{', '.join(sorted(ALGORITHMS))}")
    objectives = _objectives(args)
    seed = _seed(args.seed)
    settings = key_values("--tuning-setting", args.tuning_setting)
    space = load_parameter_file(Path(args.tuning_parameters).expanduser())
    settings.update(_bayesian_settings(args))
    early_stopping, early_stopping_settings = _early_stopping(args, objectives)
    try:
        algorithm_class(args.tuning_type).validate(space, settings, trial_steps,
                                                   objectives=len(objectives.names))
    except SearchInputError as err:
        flag = "--bayes-backend" if "optimizes one objective" in str(err) \
            else f"--tuning-type {args.tuning_type}"
        raise UsageError(f"{flag}: {err}") from None
    search = common_pb2.JobSpec(
        app_name=args.app_name,
        space=space_to_proto(space),
        tuning_type=args.tuning_type,
        max_trials=trial_steps,
        parallelism=parallelism,
        max_failed_trials=max_failed,
        seed=seed,
        settings=settings,
        early_stopping=early_stopping,
        early_stopping_settings=early_stopping_settings,
    )
    objectives.write_to(search)
    return search


def _target(text: str) -> float:
    try:
        target = float(text)
    except ValueError:
        raise UsageError(f"--target: invalid value {text!r}: expected a number") from None
    if not math.isfinite(target):
        raise UsageError(f"--target: invalid value {text!r}: expected a finite number (a trial "
                         "can never reach it)")
    return target


def _seed(text: str | None) -> int:
    """The given seed, or a random one (printed and recorded)."""
    if text is None:
        return secrets.randbelow(2**31)
    try:
        seed = int(text)
    except ValueError:
        raise UsageError(f"--seed: invalid value {text!r}: expected an integer") from None
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed: invalid value {text!r}: expected an integer from 0 to "
                         f"{MAX_SEED}")
    return seed


def _deadline(text: str | None) -> float:
    """``--deadline`` in seconds since the epoch; 0 when not given."""
    if text is None:
        return 0.0
    try:
        return parse_deadline(text, time.time())
    except DeadlineError as err:
        raise UsageError(f"--deadline: {err}") from None


def _telemetry_interval(text: str) -> float:
    """``--telemetry-interval`` in seconds; 0 (or ``0s``) turns telemetry off."""
    if text.strip() in ("0", "0s", "0.0"):
        return 0.0
    try:
        seconds = parse_duration(text)
    except DurationError as err:
        raise UsageError(f"--telemetry-interval: {err}; or 0 to turn telemetry off") from None
    if seconds < 0.2:
        raise UsageError(f"--telemetry-interval: {text!r} is too often: at least 0.2s, or 0 to "
                         "turn telemetry off")
    return seconds


def _max_duration(text: str | None, flag: str) -> float:
    """A duration flag in seconds; 0 when not given."""
    if text is None:
        return 0.0
    try:
        return parse_duration(text)
    except DurationError as err:
        raise UsageError(f"{flag}: {err}") from None


def _files_and_inputs(args: argparse.Namespace) -> tuple[tuple[str, ...],
                                                         tuple[InputSpec, ...]]:
    """``--files`` and ``--input``: each exists, and sandbox names are unique."""
    files = [existing_file("--files", item) for group in args.files
             for item in filter(None, (p.strip() for p in group.split(",")))]
    names = [Path(f).name for f in files]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"--files: two files are named {duplicates[0]!r}; sandbox names must "
                         "be unique")
    inputs: list[InputSpec] = []
    for item in args.input:
        source, name = pair("--input", item)
        if "://" not in source:
            path = Path(source).expanduser()
            if not path.exists():
                raise UsageError(f"--input: {source}: no such file or folder")
            source = str(path.resolve())
        if name in names or any(i.name == name for i in inputs):
            raise UsageError(f"--input {item}: the sandbox already has a {name!r} (from --files "
                             "or another --input); NAMEs must be unique")
        inputs.append(InputSpec(source, name))
    return tuple(files), tuple(inputs)


def _checkpoints(args: argparse.Namespace) -> dict[str, Any]:
    """``--checkpoint-dir``, ``--checkpoint-max-size`` and ``--checkpoint-keep`` (JobConfig's
    fields of those names)."""
    folder = ""
    if args.checkpoint_dir:
        dest = Path(args.checkpoint_dir).expanduser()
        if dest.exists() and not dest.is_dir():
            raise UsageError(f"--checkpoint-dir: {args.checkpoint_dir}: exists and is not a "
                             "folder")
        folder = str(dest.resolve())
    return {"checkpoint_dir": folder,
            "checkpoint_max_bytes": size_bytes("--checkpoint-max-size",
                                             args.checkpoint_max_size),
            "checkpoint_keep": int(positive_number("--checkpoint-keep", args.checkpoint_keep,
                                                   integer=True, most=1000))}


def _output(text: str | None) -> OutputSpec | None:
    if not text:
        return None
    destination, name = pair("--output", text)
    dest = Path(destination).expanduser()
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"--output: {destination}: exists and is not a folder")
    return OutputSpec(str(dest.resolve()), name)


def _check_local(config: JobConfig) -> None:
    """With ``--master local``: the machine has the GPUs and the Docker engine the job needs."""
    from disauto.submit.local import LocalClusterError
    from disauto.submit.local import check_local_docker
    from disauto.submit.local import check_local_gpus

    try:
        check_local_gpus(config)
        check_local_docker(config)
    except LocalClusterError as err:
        raise UsageError(str(err)) from None


def search_notes(search: common_pb2.JobSpec) -> tuple[str, ...]:
    """What the algorithm says of how it searches the space (``cmaes``: the parameters it
    does not model); none where the record's search no longer validates (a resumed job
    says what its AppCore says, not a note)."""
    try:
        return algorithm_class(search.tuning_type).notes(space_from_proto(search.space),
                                                         dict(search.settings))
    except SearchInputError:
        return ()


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
