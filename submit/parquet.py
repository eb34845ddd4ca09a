"""``da-job results JOB --format parquet``: the trials as one Parquet file, for pandas, Polars,
DuckDB or Spark, without going through text.

The columns are results.csv's (:func:`results.trial_rows`, best first), each typed: the trial
number an integer, a numeric parameter, metric or objective a float (or an integer when every
value is one), a missing value null. A parameter whose values mix types (a choice of ``1`` and
``"auto"``) is a column of text, each value as results.json writes it. The file's metadata
(key ``disauto``) holds the job id, the objectives and their directions, and results.json's
schema version. pyarrow writes it (``pip install 'disauto[dataframe]'``); pandas is not needed.
"""

from __future__ import annotations

from collections.abc import Sequence
import json
from pathlib import Path
from typing import Any

from disauto.common.objectives import Objectives
from disauto.framework.record import TrialRow
from disauto.submit import results


INSTALL = "pip install 'disauto[dataframe]'"
"""What to install for it."""

METADATA_KEY = b"disauto"
"""The key of the file's metadata that describes the job (JSON)."""


class ParquetUnavailableError(ImportError):
    """pyarrow is not installed (the message says what to install, in one line)."""


def require_pyarrow() -> Any:
    """The ``pyarrow`` module.

    Raises:
        ParquetUnavailableError: it is not installed.
    """
    try:
        import pyarrow
    except ImportError:
        raise ParquetUnavailableError(f"--format parquet needs pyarrow: {INSTALL}") from None
    return pyarrow


def write(path: Path, job_id: str, trials: Sequence[TrialRow], maximize: bool,
          param_order: Sequence[str], objectives: Objectives) -> int:
    """Write the trials to ``path`` as Parquet (replacing it once whole; nothing is left
    half-written); how many rows it has.

    Raises:
        ParquetUnavailableError: pyarrow is not installed.
        OSError: the file could not be written.
    """
    pyarrow = require_pyarrow()
    from pyarrow import parquet

    header, rows = results.trial_rows(trials, maximize, param_order, objectives)
    columns = [_column(pyarrow, [row[i] for row in rows], kind)
               for i, kind in enumerate(_kinds(pyarrow, header))]
    described = {"job_id": job_id, "objectives": list(objectives.names),
                 "directions": list(objectives.directions), "schema": results.SCHEMA}
    table = pyarrow.table(columns, names=header).replace_schema_metadata(
        {METADATA_KEY: json.dumps(described).encode()})
    partial = path.with_name(f".{path.name}.partial")
    try:
        parquet.write_table(table, str(partial))
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return len(rows)


def _kinds(pyarrow: Any, header: Sequence[str]) -> list[Any]:
    """The type of each of results.csv's columns, None for the parameters' (theirs is their
    values'): the same for every job, so that the files of several jobs concatenate. The
    columns after the parameters are found from the end, where results.csv puts them."""
    message = len(header) - 1 - header[::-1].index("message")
    number, text, integer = pyarrow.float64(), pyarrow.string(), pyarrow.int64()
    kinds: list[Any] = [integer, text, number]
    kinds += [number if name.startswith("metric:") else None
              for name in header[len(kinds):message - 1]]
    kinds += [number, text, *(number for _ in results.USAGE_CSV)]
    extras = {"feasible": integer, "constraints": text, "pareto_front": integer}
    return kinds + [extras[name] for name in header[len(kinds):]]


def _column(pyarrow: Any, values: list[Any], kind: Any) -> Any:
    """One column's array: of type ``kind`` (None: pyarrow's own type for the values), text
    when they do not fit it (each value as JSON writes it, a string as it is)."""
    try:
        return pyarrow.array(values, type=kind)
    except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError, TypeError, ValueError):
        return pyarrow.array([None if value is None else value if isinstance(value, str)
                              else json.dumps(value) for value in values],
                             type=pyarrow.string())
