"""The executor's exact-usage contract in ``TaskStatus.data`` (``common/task_usage.py``)."""

from __future__ import annotations

import base64
import json
import resource

from disauto.common import task_usage
from disauto.common.task_usage import TaskUsage


def test_status_data_round_trips_and_is_base64_json() -> None:
    usage = TaskUsage(1.25, 0.5, 200 * 1024 * 1024)
    data = task_usage.status_data(usage)
    body = json.loads(base64.b64decode(data))
    assert body["kind"] == task_usage.KIND and body["v"] == task_usage.VERSION
    read = task_usage.read_status_data(data)
    assert read == usage
    assert read is not None and read.cpu_seconds == 1.75


def test_from_rusage_takes_kilobytes_of_maxrss() -> None:
    own = resource.getrusage(resource.RUSAGE_SELF)
    usage = task_usage.from_rusage(own)
    assert usage.max_rss_bytes == own.ru_maxrss * 1024
    assert usage.cpu_user_seconds == round(own.ru_utime, 6)


def test_anything_else_is_no_usage_never_an_error() -> None:
    def encoded(body: object) -> str:
        return base64.b64encode(json.dumps(body).encode()).decode()

    good = task_usage.to_json(TaskUsage(1.0, 0.0, 10))
    for data in (None, "", 7, "not base64!", base64.b64encode(b"\xff\xfe").decode(),
                 encoded([1, 2]), encoded({"kind": "other", "v": 1}),
                 encoded({**good, "v": 2}), encoded({**good, "cpu_user_seconds": "x"}),
                 encoded({**good, "cpu_system_seconds": -1}),
                 encoded({**good, "cpu_user_seconds": float("nan")}),
                 encoded({**good, "max_rss_bytes": -5})):
        assert task_usage.read_status_data(data) is None, data
