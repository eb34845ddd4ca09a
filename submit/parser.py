"""``da-submit``'s flags: the argument parser, one group of flags at a time.

Nothing here checks a value; :mod:`submit.validate` does, after parsing.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms.bayesian import BACKENDS
from disauto.appcore.pruners import PRUNERS
from disauto.framework.policies import POLICIES
from disauto.submit import suggest
from disauto.submit.errors import DisAutoUsageError


PROG = "da-submit"

logger = logging.getLogger(__name__)


class UsageError(DisAutoUsageError):
    """A flag is wrong; the message names it and what would be valid."""


POLICY_SETTING = "--policy-setting"
"""The flag of the offer policy's settings (``KEY=VALUE``, repeatable)."""
PRIORITY_SETTING = "--priority-setting"
"""Its older name, an alias: the first policy settings were the dynamic priority strategy's."""


class SpelledAppend(argparse.Action):
    """``append``, and how the flag of each item was spelled (in ``<dest>_flags``), so that an
    error names the flag the user typed, ``--policy-setting`` or its alias."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        spelled = getattr(namespace, f"{self.dest}_flags", None) or []
        setattr(namespace, f"{self.dest}_flags",
                [*spelled, option_string or self.option_strings[0]])


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors become UsageError
        raise UsageError(suggest.invalid_choice(self, message))

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        # As argparse's own, but an unknown flag gets the nearest known one ("did you mean").
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(suggest.unrecognized(extras, suggest.option_strings(self)))
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description="Run a hyperparameter search of a training script on Mesos.",
        epilog="Docs: README.md. Results: $DISAUTO_HOME/jobs/<job-id>/ (default ~/.disauto).",
    )
    _job_flags(parser)
    _search_flags(parser)
    _cluster_flags(parser)
    _container_flags(parser)
    _checkpoint_flags(parser)
    _output_flags(parser)
    return parser


def _job_flags(parser: argparse.ArgumentParser) -> None:
    """The paper's Fig. 3 flags: the job, its files and its tasks' resources."""
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
    job.add_argument("--slot-mode", default=None, metavar="task|warm",
                     help="task: each trial is a Mesos command task; warm: trials run as tasks "
                          "of long-lived DisAuto executors, one per slot, with no process or "
                          "fetch to start per trial (docs/warm-slots.md). Default: warm with "
                          "--slot-preload auto for a 'python SCRIPT' launch command without "
                          "--docker-image, GPUs or an AppCore image or command; else task")
    job.add_argument("--slot-idle", default="10s", metavar="DURATION",
                     help="warm slots: shut a slot down after it has had no trial this long "
                          "(default 10s)")
    job.add_argument("--slot-preload", default="", metavar="auto|MODULE[,MODULE...]",
                     help="warm slots (implies --slot-mode warm): each slot imports these "
                          "modules (and apprunner_sdk) once in a Python that forks every trial, "
                          "so a trial pays no interpreter start or import; auto: the script's "
                          "top-level imports that can be imported and are fork-safe; the launch "
                          "command must be 'python SCRIPT ARGS' or 'python -m MODULE ARGS'; not "
                          "for modules that start threads or a GPU at import "
                          "(docs/warm-slots.md)")
    job.add_argument("--telemetry-interval", default="1s", metavar="DURATION",
                     help="measure every trial's CPU, memory and GPU this often, from the "
                          "agents' /monitor/statistics (default 1s; 0 turns telemetry off)")
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


def _search_flags(parser: argparse.ArgumentParser) -> None:
    """The search: algorithm, budget, objective, early stopping."""
    search = parser.add_argument_group("the search")
    search.add_argument("--parallelism", default="1", metavar="N",
                        help="trials in flight at once (default 1)")
    search.add_argument("--objective", default="accuracy", metavar="METRIC[,METRIC...]",
                        help="the reported metric to optimize (default accuracy); several, "
                             "comma-separated, for a Pareto front (e.g. accuracy,latency)")
    search.add_argument("--direction", metavar="maximize|minimize[,...]",
                        help="maximize (default) or minimize the objective; one per objective "
                             "when there are several (e.g. maximize,minimize)")
    search.add_argument("--target", metavar="VALUE[,VALUE...]",
                        help="stop as soon as a feasible trial's final objective reaches VALUE; "
                             "one per objective when there are several (all must be reached)")
    search.add_argument("--max-duration", metavar="DURATION",
                        help="end the job after this long (e.g. 2h, 90m, 1h30m): running trials "
                             "are killed, the record kept")
    search.add_argument("--deadline", metavar="WHEN",
                        help="when the search should be done: a local time (2026-11-24T18:00 "
                             "or 18:00) or a duration from now (2h); --offer-policy deadline "
                             "schedules by it (docs/deadlines.md)")
    search.add_argument("--trial-timeout", metavar="DURATION",
                        help="kill a trial that runs longer than this (e.g. 10m); it is "
                             "recorded TIMEOUT and its slot refilled (COMPLETED if its final "
                             "result is in)")
    search.add_argument("--trial-exit-grace", metavar="DURATION",
                        help="how long a trial's task may run on after its final report "
                             "(default 30s); then it is killed, the trial COMPLETED with its "
                             "result and its slot refilled")
    search.add_argument("--max-failed-trials", default="3", metavar="N",
                        help="stop the job when more than N trials fail (default 3)")
    search.add_argument("--trial-retries", default="0", metavar="N",
                        help="run a trial whose script fails again, with the same assignment, "
                             "up to N times (default 0); it counts as one failure only when "
                             "every try failed")
    search.add_argument("--seed", metavar="N",
                        help="seed of the search (default: random, printed)")
    search.add_argument("--bayes-backend", metavar="NAME",
                        help="with --tuning-type bayesian: the library's model, one of "
                             f"{', '.join(BACKENDS)} (default tpe; README)")
    search.add_argument("--bayes-mode", metavar="MODE",
                        help="with --tuning-type bayesian: async (default: suggest when a slot "
                             "frees) or sync (batches of --parallelism)")
    search.add_argument("--warm-start", metavar="FILE",
                        help="with --tuning-type bayesian: an earlier job's results.json (its "
                             "results teach the model) or a JSON list of points to run first")
    search.add_argument("--early-stopping", default="none", metavar="RULE",
                        help="stop unpromising trials on their step reports: one of "
                             f"{', '.join(PRUNERS)} (default none)")
    search.add_argument("--early-stopping-setting", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a setting of the early-stopping rule, e.g. min_resource=1; "
                             "repeatable (README)")


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    """The cluster: master, authentication, offer policy, the embedded cluster."""
    cluster = parser.add_argument_group("the cluster")
    cluster.add_argument("--master", default="local",
                         help="local (boot the embedded cluster, default), host:port, or "
                              "zk://host:port/mesos")
    cluster.add_argument("--master-timeout", metavar="DURATION",
                         help="stop the job (exit 3) when the master has been away this long "
                              "(default 10m); da-job resume carries it on once it is back")
    cluster.add_argument("--role", dest="roles", action="append", default=[], metavar="ROLE",
                         help="a Mesos role to run the job's tasks in (repeatable): the job is "
                              "also offered the resources reserved for it, such as a team's "
                              "GPU agents (default: the role *, unreserved resources only)")
    cluster.add_argument("--unreachable-timeout", metavar="DURATION",
                         help="how long a trial whose agent Mesos marked unreachable (a network "
                              "partition) is waited for before it runs again elsewhere "
                              "(default 5m; its old task is killed if it comes back)")
    cluster.add_argument("--user", metavar="NAME",
                         help="the user Mesos runs the job's tasks as (FrameworkInfo.user): "
                              "agents with --switch_user, their default, need it on their "
                              "machines (default: your login)")
    cluster.add_argument("--principal", help="Mesos principal (HTTP basic auth)")
    cluster.add_argument("--secret-file", metavar="FILE",
                         help="file holding the principal's secret")
    cluster.add_argument("--agent-principal", metavar="PRINCIPAL",
                         help="the principal the agents' HTTP endpoints (task logs, telemetry) "
                              "are read as, for agents with --authenticate_http_readonly "
                              "(default: --principal)")
    cluster.add_argument("--agent-secret-file", metavar="FILE",
                         help="file holding that principal's secret (default: --secret-file)")
    cluster.add_argument("--offer-policy", default="fifo", help=f"one of {', '.join(POLICIES)}")
    cluster.add_argument(POLICY_SETTING, PRIORITY_SETTING, dest="policy_setting",
                         action=SpelledAppend, default=[], metavar="KEY=VALUE",
                         help="a setting of the offer policy: of every policy, e.g. "
                              "placement=capability (docs/placement.md); of dynamic and "
                              "dynamic-plus, e.g. thresholds=0.01,0.005 or declines_per_level=2 "
                              "(docs/dynamic-priority.md); of deadline, e.g. "
                              "patience_seconds=60 (docs/deadlines.md); repeatable. "
                              f"{PRIORITY_SETTING} is its older name, an alias")
    parser.set_defaults(policy_setting_flags=[])
    cluster.add_argument("--advertise-host", metavar="HOST",
                         help="how tasks reach this machine (default: derived from --master)")
    cluster.add_argument("--bind-all", action="store_true",
                         help="on a cluster: listen on every interface (0.0.0.0), not just the "
                              "--advertise-host address (the framework) and the agent's host "
                              "name (AppCore); refused with --master local (loopback only)")
    cluster.add_argument("--tls", action="store_true",
                         help="serve both gRPC services over TLS with a self-signed "
                              "certificate made for this job (tasks trust it alone)")
    cluster.add_argument("--tls-cert", metavar="FILE",
                         help="serve the framework's gRPC service over TLS with this "
                              "certificate (PEM; a chain: the leaf first); needs --tls-key")
    cluster.add_argument("--tls-key", metavar="FILE",
                         help="the unencrypted private key (PEM) of --tls-cert")
    cluster.add_argument("--app-core-command", metavar="CMD",
                         help="how agents start AppCore (default: this Python's "
                              "`-m disauto.appcore` locally, `python3 -m disauto.appcore` on a "
                              "real cluster)")
    cluster.add_argument("--local-agents", default="1", metavar="N",
                         help="agents of the embedded cluster with --master local (default 1)")


def _container_flags(parser: argparse.ArgumentParser) -> None:
    """Containers: the images of trials and AppCore, the containerizer."""
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


def _checkpoint_flags(parser: argparse.ArgumentParser) -> None:
    """Where trials' checkpoints go (apprunner_sdk.save_checkpoint) and how many are kept."""
    kept = parser.add_argument_group("checkpoints (README: Checkpoints)")
    kept.add_argument("--checkpoint-dir", metavar="DST",
                      help="a folder every agent and this machine share: trials write their "
                           "checkpoints to DST/<job id>/ themselves (default: uploaded to the "
                           "job's folder over the framework's gRPC service)")
    kept.add_argument("--checkpoint-max-size", default="1GB", metavar="SIZE",
                      help="the largest checkpoint kept (default 1GB); a larger one is refused "
                           "with one line to the trial, which goes on")
    kept.add_argument("--checkpoint-keep", default="2", metavar="N",
                      help="checkpoints kept per trial, the oldest dropped (default 2)")


def _output_flags(parser: argparse.ArgumentParser) -> None:
    """What da-submit prints."""
    out = parser.add_argument_group("output")
    out.add_argument("--quiet", action="store_true", help="no progress line")
    out.add_argument("--detach", action="store_true",
                     help="run the job in the background (it survives this terminal); print its "
                          "id and return at once. Follow it with da-job status/logs")
    out.add_argument("--job-id", help=argparse.SUPPRESS)  # the detached process's job id
    out.add_argument("--debug", action="store_true", help="debug logs and full tracebacks")
