"""Where is the job's framework now? Asked of the Mesos master, which every task can reach.

A framework that died and was resumed (``da-job resume``) re-subscribes with the same
FrameworkID, but not always on the same port: another process may have taken the old one. Its
FrameworkInfo carries its gRPC address in the label
:data:`~common.task_env.FRAMEWORK_ADDRESS_LABEL`, and a re-subscription updates the
FrameworkInfo the master keeps (Mesos' ``updateFramework``), so AppCore and runners whose
framework stopped answering look it up in the master's ``/master/frameworks`` (a read-only
endpoint; a master that requires authentication for those, ``--authenticate_http_readonly``,
answers 401 and the look-up finds nothing).
"""

from __future__ import annotations

import json
import logging
from urllib.parse import quote

from disauto.common.task_env import FRAMEWORK_ADDRESS_LABEL


logger = logging.getLogger(__name__)


def framework_address(master: str, framework_id: str, timeout: float = 5.0) -> str:
    """The gRPC address the active framework ``framework_id`` announces, or "" when the master
    cannot be asked, does not know it, or knows it only as completed (torn down)."""
    if not master or not framework_id:
        return ""
    # Here, not at the module's top: every runner imports this module and almost none asks
    # (urllib.request was a tenth of the SDK's import, paid by each trial).
    from urllib.request import urlopen

    url = f"http://{master}/master/frameworks?framework_id={quote(framework_id)}"
    try:
        with urlopen(url, timeout=timeout) as response:  # noqa: S310 - the job's own master
            frameworks = json.loads(response.read()).get("frameworks", [])
    except (OSError, ValueError, AttributeError) as err:
        logger.debug("cannot ask the master at %s for framework %s: %s", master, framework_id,
                     err)
        return ""
    for framework in frameworks if isinstance(frameworks, list) else []:
        if not isinstance(framework, dict) or framework.get("id") != framework_id:
            continue
        labels = framework.get("labels")
        for label in labels if isinstance(labels, list) else []:
            if isinstance(label, dict) and label.get("key") == FRAMEWORK_ADDRESS_LABEL:
                return str(label.get("value", ""))
    return ""
