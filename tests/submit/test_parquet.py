"""``da-job results --format parquet``'s file (:mod:`submit.parquet`): each column typed, the
same types for every job, a parameter of mixed types as text; written whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.common.objectives import Objectives
from disauto.common.trial_state import TrialState
from disauto.framework._store import TrialRow
from disauto.submit import parquet


ACCURACY = Objectives(("accuracy",), ("maximize",))


def test_each_column_has_one_type_and_mixed_parameters_are_text(tmp_path: Path) -> None:
    from pyarrow import parquet as pq

    trials = [TrialRow(1, {"act": 1, "layers": 2, "lr": 0.1}, TrialState.COMPLETED,
                       objective=0.9, metrics={"accuracy": 0.9}),
              TrialRow(2, {"act": "auto", "layers": 3, "lr": 1}, TrialState.FAILED,
                       message="exited with status 1"),
              TrialRow(3, {"act": [1, 2], "layers": 4}, TrialState.COMPLETED, objective=1,
                       metrics={"accuracy": 1})]
    path = tmp_path / "t.parquet"
    assert parquet.write(path, "job-x", trials, True, ["lr"], ACCURACY) == 3
    table = pq.read_table(path)
    types = {field.name: str(field.type) for field in table.schema}
    assert types == {"trial": "int64", "state": "string", "objective": "double",
                     "lr": "double", "act": "string", "layers": "int64",
                     "metric:accuracy": "double", "training_seconds": "double",
                     "message": "string", "peak_rss_mb": "double", "cpu_seconds": "double",
                     "mean_gpu_utilization": "double", "peak_gpu_memory_mb": "double"}
    rows = table.to_pylist()
    assert [row["trial"] for row in rows] == [3, 1, 2]  # best first, as results.csv
    assert [row["act"] for row in rows] == ["[1, 2]", "1", "auto"]
    assert [row["lr"] for row in rows] == [None, 0.1, 1.0]
    assert rows[2]["objective"] is None and rows[0]["metric:accuracy"] == 1.0


def test_a_file_that_cannot_be_written_leaves_nothing(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pyarrow import parquet as pq

    def fail(table: object, where: str) -> None:
        Path(where).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    path = tmp_path / "t.parquet"
    path.write_bytes(b"before")
    monkeypatch.setattr(pq, "write_table", fail)
    with pytest.raises(OSError, match="No space left"):
        parquet.write(path, "job-x", [], True, [], ACCURACY)
    assert path.read_bytes() == b"before" and [p.name for p in tmp_path.iterdir()] == [
        "t.parquet"]
