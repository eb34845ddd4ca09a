"""The telemetry data service: the registry and the samples of a job, as JSON.

In the spirit of the registry and data services of ``../shared/papers/000_*``, beside the job
page (``server.py`` routes here; the paths are relative to ``/jobs/<id>``, and to ``/`` on the
framework's own server, which serves one job)::

    GET    api/registry                 every collector and processor, with its status
    GET    api/registry/<name>          one of them
    POST   api/registry                 add one                       (the job token needed)
    PUT    api/registry/<name>          change one                    (the job token needed)
    DELETE api/registry/<name>          delete one (not a built-in)   (the job token needed)
    GET    api/data?dataName=N[&node=A][&trial=T][&since=S]   the samples, oldest first
    GET    api/data/names               the data names there are, per node, with their trials

Every function here raises :class:`ActionError` (an HTTP status and one line naming what is
wrong and what is valid) for a bad request. A job served from its record (``da-job ui``) reads
the same data and the registry as last kept; changing it needs the framework's own server.
"""

from __future__ import annotations

from collections.abc import Mapping
import math
from typing import Any

from disauto.framework._errors import AlreadyExistsError
from disauto.framework._errors import FailedPreconditionError
from disauto.framework._errors import InvalidArgumentError
from disauto.framework._errors import JobError
from disauto.framework._errors import NotFoundError
from disauto.framework._telemetry.lines import sample_json
from disauto.framework._telemetry.registry import TelemetryRegistry
from disauto.framework._telemetry.registry import recorded_registry
from disauto.framework.webui.sources import ActionError
from disauto.framework.webui.sources import JobSource


DATA_PARAMETERS = ("dataName", "node", "trial", "since")
MAX_SAMPLES = 100_000
"""The most samples one answer carries (the oldest first; ``since`` pages on)."""

_STATUS: tuple[tuple[type[JobError], int], ...] = (
    (InvalidArgumentError, 400), (NotFoundError, 404), (AlreadyExistsError, 409),
    (FailedPreconditionError, 409))


def _action_error(err: JobError) -> ActionError:
    status = next((code for kind, code in _STATUS if isinstance(err, kind)), 400)
    return ActionError(status, str(err))


def _one(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ActionError(400, f"{name} is given {len(values)} times: give it once")
    return values[0]


def samples(source: JobSource, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """``GET api/data``: the samples of one data name, narrowed by node, trial and time."""
    unknown = sorted(set(query) - set(DATA_PARAMETERS))
    if unknown:
        raise ActionError(400, f"unknown parameter {', '.join(unknown)} "
                               f"(valid: {', '.join(DATA_PARAMETERS)})")
    name = _one(query, "dataName")
    node = _one(query, "node")
    trial_text = _one(query, "trial")
    since_text = _one(query, "since")
    trial: int | None = None
    since: float | None = None
    if trial_text is not None:
        try:
            trial = int(trial_text)
        except ValueError:
            raise ActionError(400, f"trial must be a trial number (an integer), "
                                   f"not {trial_text!r}") from None
    if since_text is not None:
        try:
            since = float(since_text)
        except ValueError:
            since = math.nan
        if not math.isfinite(since):
            raise ActionError(400, f"since must be Unix seconds (a number), not {since_text!r}")
    with source.store() as store:
        series = store.sample_series()
        names = sorted({s["data_name"] for s in series})
        if not name:
            raise ActionError(400, "missing dataName: one of "
                                   f"{', '.join(names) or '(no data yet)'} (api/data/names)")
        of_name = [s for s in series if s["data_name"] == name]
        if not of_name:
            raise ActionError(404, f"no data named {name!r} (there is: "
                                   f"{', '.join(names) or 'no data yet'})")
        nodes = [s["node"] for s in of_name]
        if node is not None and node not in nodes:
            raise ActionError(404, f"no {name} from node {node!r} (nodes with {name}: "
                                   f"{', '.join(nodes)})")
        found = store.samples(name, node, trial, since)
    return {"dataName": name, "node": node, "trial": trial, "since": since,
            "count": min(len(found), MAX_SAMPLES), "truncated": len(found) > MAX_SAMPLES,
            "samples": [sample_json(s) for s in found[:MAX_SAMPLES]]}


def names(source: JobSource) -> dict[str, Any]:
    """``GET api/data/names``: the data names and nodes there are, and each series."""
    with source.store() as store:
        series = store.sample_series()
    return {"names": sorted({s["data_name"] for s in series}),
            "nodes": sorted({s["node"] for s in series}), "series": series}


def _registry(source: JobSource, action: str) -> TelemetryRegistry:
    registry = source.registry()
    if registry is None:
        raise ActionError(409, f"cannot {action} here: this server reads job {source.job_id} "
                               "from its record; the registry changes on the server of the "
                               "framework that runs the job (its webui_url)")
    return registry


def registry_list(source: JobSource) -> dict[str, Any]:
    """``GET api/registry``."""
    registry = source.registry()
    if registry is not None:
        return {"entries": registry.describe(), "live": True}
    with source.store() as store:
        return {"entries": recorded_registry(store), "live": False}


def registry_entry(source: JobSource, name: str) -> dict[str, Any]:
    """``GET api/registry/<name>``."""
    entries = registry_list(source)["entries"]
    for entry in entries:
        if entry.get("name") == name:
            return dict(entry)
    raise ActionError(404, f"no collector or processor named {name!r} (there are: "
                           f"{', '.join(e['name'] for e in entries) or 'none'})")


def _body_object(body: Any) -> Mapping[str, Any]:
    if body is None:
        raise ActionError(400, "the request body must be a JSON object with the entry's "
                               "fields (name, kind, command, interval, timeout, inputs)")
    return body  # the server has checked it is a JSON object


def registry_add(source: JobSource, body: Any) -> dict[str, Any]:
    """``POST api/registry``: the entry added."""
    registry = _registry(source, "add a collector or processor")
    try:
        entry = registry.add(_body_object(body))
    except JobError as err:
        raise _action_error(err) from None
    return entry.to_json()


def registry_update(source: JobSource, name: str, body: Any) -> dict[str, Any]:
    """``PUT api/registry/<name>``: the entry as changed."""
    registry = _registry(source, "change a collector or processor")
    try:
        entry = registry.update(name, _body_object(body))
    except JobError as err:
        raise _action_error(err) from None
    return entry.to_json()


def registry_delete(source: JobSource, name: str) -> dict[str, Any]:
    """``DELETE api/registry/<name>``."""
    registry = _registry(source, "delete a collector or processor")
    try:
        registry.remove(name)
    except JobError as err:
        raise _action_error(err) from None
    return {"ok": True, "message": f"{name} deleted"}
