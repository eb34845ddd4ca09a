"""Job and trial tokens.

The framework mints one random token per job and gives it to AppCore only. A trial's token is
derived from it (HMAC-SHA256 of the trial number), so AppCore and the framework can both check
a runner's token without sharing any state, and a runner's token opens nothing but its trial.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_job_token() -> str:
    """A fresh random job token."""
    return secrets.token_hex(24)


def trial_token(job_token: str, trial_number: int) -> str:
    """The token of trial ``trial_number`` of the job with ``job_token``."""
    digest = hmac.new(job_token.encode(), f"trial:{trial_number}".encode(), hashlib.sha256)
    return digest.hexdigest()


def check_trial_token(job_token: str, trial_number: int, token: str) -> bool:
    """True when ``token`` is trial ``trial_number``'s token (constant-time)."""
    return hmac.compare_digest(trial_token(job_token, trial_number), token)


def check_job_token(job_token: str, token: str) -> bool:
    """True when ``token`` is the job token (constant-time)."""
    return hmac.compare_digest(job_token, token)
