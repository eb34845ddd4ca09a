"""``da-job resume``: carry on a job whose framework died, from its record.

The record holds everything to rebuild the job (its configuration, master, offer policy and the
embedded cluster's size); only a principal's secret is not kept, so a master that authenticates
needs ``--secret-file`` again, and agents read as another principal ``--agent-secret-file``.
On the same master the framework re-subscribes with its recorded
FrameworkID (within ``failover_timeout``), reconciles its tasks and adopts those still running;
a ``--master local`` job boots a fresh embedded cluster (the old one died with its process), and
the trials that were in flight run again, each counted once.
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
from typing import IO

from disauto.common.processes import with_environment
from disauto.common.task_env import JOB_ID
from disauto.framework.record import meta
from disauto.submit.exit_status import ExitStatus
from disauto.submit.job_lock import JobLock
from disauto.submit.jobs import Job
from disauto.submit.run import detach
from disauto.submit.run import run
from disauto.submit.validate import Submission
from disauto.submit.validate import search_notes


def submission_of(job: Job, secret_file: str | None = None,
                  agent_secret_file: str | None = None) -> Submission:
    """The Submission that runs ``job`` again, as it was submitted.

    Raises:
        ValueError: the master (or the agents, as another principal) authenticates and no
            secret was given.
    """
    recorded = job.meta
    principal = recorded[meta.PRINCIPAL] or None
    secret = Path(secret_file).read_text().strip() if secret_file else None
    if principal and secret is None:
        raise ValueError(f"job {job.job_id} authenticates to its master as {principal!r}: give "
                         "--secret-file (secrets are not kept in the record)")
    agent_principal = recorded[meta.AGENT_PRINCIPAL] or None
    agent_secret = Path(agent_secret_file).read_text().strip() if agent_secret_file else None
    if agent_secret is None and agent_principal == principal:
        agent_secret = secret
    if agent_principal and agent_secret is None:
        raise ValueError(f"job {job.job_id} reads its agents as {agent_principal!r}: give "
                         "--agent-secret-file (secrets are not kept in the record)")
    return Submission(
        config=job.config,
        master=recorded[meta.SUBMITTED_MASTER] or recorded[meta.MASTER] or "local",
        principal=principal,
        secret=secret,
        offer_policy=recorded[meta.OFFER_POLICY],
        advertise_host=recorded[meta.ADVERTISE_HOST] or None,
        bind_all=recorded[meta.BIND_ALL],
        local_agents=recorded[meta.LOCAL_AGENTS],
        quiet=False,
        debug=False,
        agent_principal=agent_principal,
        agent_secret=agent_secret,
        notes=search_notes(job.config.search),  # its AppCore searches as before: said again
    )


def resume(job: Job, *, detach_it: bool, secret_file: str | None, out: IO[str],
           err: IO[str], lock: JobLock, agent_secret_file: str | None = None) -> ExitStatus:
    """Resume ``job`` here (to its end), or in the background with ``detach_it``, holding its
    ``lock`` (handed to the background process)."""
    submission = submission_of(job, secret_file, agent_secret_file)
    if submission.master == "local" and not detach_it:
        # The embedded cluster died with the framework's process; what it ran did not.
        _kill_leftovers(job.job_id)
    if detach_it:
        extra = ["--secret-file", secret_file] if secret_file else []
        extra += ["--agent-secret-file", agent_secret_file] if agent_secret_file else []
        return detach(job.job_id, ["-m", "disauto.submit.job_cli", "resume", job.job_id, *extra],
                      out, lock=lock)
    return run(submission, out, err, resume=True, lock=lock)


def _kill_leftovers(job_id: str) -> list[int]:
    """Kill the job's AppCore and runners left by a local cluster that died (each task runs in
    its own process group; the group goes with it). Returns the pids found."""
    pids = with_environment(JOB_ID, job_id)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue  # gone meanwhile, or not ours
    return pids
