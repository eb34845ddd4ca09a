"""The task environment: how the framework tells a task everything it needs.

The framework sets these variables in ``CommandInfo.environment``; the SDK and AppCore read them.
One module holds the names so the two sides cannot drift apart. Nothing here depends on a
variable a Mesos agent sets (a real agent sets no ``PORT0``, and sets no GPU variable for a
command task): everything a task needs comes from these.
"""

from __future__ import annotations

from collections.abc import Mapping


JOB_ID = "DISAUTO_JOB_ID"
"""The job's id."""

TRIAL_NUMBER = "DISAUTO_TRIAL_NUMBER"
"""The trial's number (runners)."""

TRIAL_TOKEN = "DISAUTO_TRIAL_TOKEN"
"""The trial's token for AppCore and the framework (runners)."""

PARAMS = "DISAUTO_PARAMS"
"""The trial's assignment as a JSON object (runners)."""

APPCORE_ADDR = "DISAUTO_APPCORE_ADDR"
"""host:port of AppCore's gRPC service (runners)."""

FRAMEWORK_ADDR = "DISAUTO_FRAMEWORK_ADDR"
"""host:port of the framework's gRPC service (AppCore and runners)."""

OUTPUT_DIR = "DISAUTO_OUTPUT_DIR"
"""Where the trial writes its outputs (``--output DST#NAME`` → ``DST/trial-NNNN``)."""

OUTPUT_NAME = "DISAUTO_OUTPUT_NAME"
"""The NAME of ``--output DST#NAME``."""

JOB_TOKEN = "DISAUTO_JOB_TOKEN"
"""The job's token (AppCore only)."""

APPCORE_PORT = "DISAUTO_APPCORE_PORT"
"""The port AppCore serves on, taken from the offer (AppCore only)."""

APPCORE_HOST = "DISAUTO_APPCORE_HOST"
"""The host name AppCore advertises to runners: the agent's hostname (AppCore only)."""

EXIT_PORT_TAKEN = 75
"""AppCore's exit status when the port its offer gave it is taken by another process on the
agent (sysexits' EX_TEMPFAIL): the framework launches it again on other ports, without counting
a failure."""

TOKEN_METADATA = "x-disauto-token"
"""The gRPC metadata key that carries a job or trial token."""

MASTER_ADDR = "DISAUTO_MASTER_ADDR"
"""host:port of the Mesos master's HTTP API as the framework saw it when it launched the task
(AppCore and runners): where a task asks for the framework's address after the framework moved
(:mod:`common.rendezvous`)."""

FRAMEWORK_ID = "DISAUTO_FRAMEWORK_ID"
"""The job's Mesos FrameworkID (AppCore and runners), for the same look-up."""

TRIAL_TRY = "DISAUTO_TRIAL_TRY"
"""Which try of the trial this task is (runners): 0 for its first launch, then its retries. A
checkpoint a lost try saves after a later one started is refused."""

RESUME_CHECKPOINT = "DISAUTO_RESUME_CHECKPOINT"
"""The checkpoint the try resumes from (runners), JSON ``{"trial", "step", "name"}``: the trial
whose training it continues (itself, or the trial a copied checkpoint came from), the step, and
the file's name in the trial's checkpoint folder; unset when it starts from scratch."""

CHECKPOINT_DIR = "DISAUTO_CHECKPOINT_DIR"
"""``--checkpoint-dir DST``'s folder of the job, ``DST/<job id>`` (runners): the trial writes
its checkpoints there itself; unset: they are uploaded to the framework."""

CHECKPOINT_MAX_BYTES = "DISAUTO_CHECKPOINT_MAX_BYTES"
"""The largest checkpoint the job keeps, in bytes (runners; ``--checkpoint-max-size``)."""

CHECKPOINT_KEEP = "DISAUTO_CHECKPOINT_KEEP"
"""How many of its checkpoints a trial keeps (runners; ``--checkpoint-keep``)."""

FRAMEWORK_ADDRESS_LABEL = "disauto.framework_address"
"""The FrameworkInfo label that carries the framework's gRPC address (``host:port``); a resumed
framework re-subscribes with its new address in it."""
APPCORE_BIND = "DISAUTO_APPCORE_BIND"
"""The address AppCore listens on (AppCore only): ``127.0.0.1`` in local mode, the agent's
host name on a cluster, ``0.0.0.0`` with ``da-submit --bind-all``."""

FRAMEWORK_CERT = "DISAUTO_FRAMEWORK_CERT"
"""The framework's TLS certificate (PEM; AppCore and runners) when the job uses TLS: its
gRPC service is then reached over TLS trusting this certificate alone. Only the certificate
travels: its private key stays in the job folder."""

FRAMEWORK_TLS_NAME = "DISAUTO_FRAMEWORK_TLS_NAME"
"""The name to check in ``FRAMEWORK_CERT`` (AppCore and runners): ``disauto-framework`` for a
job's self-signed certificate, a name of the user's ``--tls-cert`` otherwise."""

APPCORE_CERT = "DISAUTO_APPCORE_CERT"
"""AppCore's own TLS certificate (PEM; runners): AppCore makes it when it starts, hands it to
the framework in AttachAppCore, and runners trust it alone (``ResolveAppCore`` gives the new
one when AppCore is relaunched)."""

THREAD_POOLS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The variables numerical libraries size their thread pools by (OpenMP, OpenBLAS, MKL)."""


def thread_pools(cpus: float, given: Mapping[str, str]) -> dict[str, str]:
    """Thread-pool sizes for a task of ``cpus`` CPUs, for the variables ``given`` leaves unset.

    Unset, OpenBLAS starts a spinning thread per core of the machine whatever the task's share
    of it: an AppCore of 0.5 CPU on a busy 2-core agent fitted scikit-optimize's GP 4-5 times
    slower than with one thread (``tests/appcore/algorithms``). Ray sizes its workers' pools by
    their CPUs in the same way."""
    size = str(max(1, int(cpus)))
    return {name: size for name in THREAD_POOLS if name not in given}
