"""``python -m apprunner_sdk.function_runner FILE``: a trial of a function that
``disauto.optimize`` shipped by value (``FILE``: :mod:`disauto.common.shipped_function`).

The function is called with the trial's parameters, the dict :func:`apprunner_sdk.get_params`
gives a script, and what it returns is the trial's final result:

* a number: the job's objective (its only one);
* a dict: the metrics reported (every objective among them; other metrics are kept too);
* a tuple or list: the objectives' values, in the job's order;
* None: the function reported its final result itself (``report(..., final=True)``).

It may report intermediate values (``report(accuracy=a, step=epoch)``, for early stopping) as a
script does. A function that raises, or returns something else, fails the trial: its traceback
goes to the trial's standard output (``da-job logs``) and its last line alone to standard
error, which the framework quotes in the trial's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import numbers
from pathlib import Path
import sys
import traceback
from typing import Any

from apprunner_sdk import _current
from apprunner_sdk import get_params
from apprunner_sdk import report
from disauto.common.shipped_function import LoadError
from disauto.common.shipped_function import load


USAGE = "usage: python -m apprunner_sdk.function_runner FILE"


class ResultError(ValueError):
    """What the function returned cannot be the trial's result (the message says why)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shipped function as this trial; 0 once its final result is reported."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        shipped = load(Path(args[0]))
        finish(shipped.function(get_params()), shipped.objectives)
    except (LoadError, ResultError) as error:
        print(str(error), file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # noqa: BLE001 - the user's function failed: the trial fails
        print("[disauto] the objective function raised:", flush=True)
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
        print(last_line(error), file=sys.stderr, flush=True)
        return 1
    return 0


def last_line(error: BaseException) -> str:
    """The last line of ``error``'s traceback: its type and message (``ValueError: boom``)."""
    return traceback.format_exception_only(type(error), error)[0].strip()


def finish(result: Any, objectives: Sequence[str]) -> None:
    """Report ``result`` as the trial's final result, unless the function reported it.

    Raises:
        ResultError: ``result`` is no result of a job of these ``objectives``.
    """
    if _current().final_sent:
        if result is not None:
            print("[disauto] the objective function reported its final result itself; the "
                  "value it returned is not reported", flush=True)
        return
    if result is None:
        raise ResultError("the objective function returned None and reported no final "
                          "result: return the objective's value (a number, or a dict or a "
                          "tuple for several objectives) or call report(..., final=True)")
    report(final=True, **final_metrics(result, objectives))


def final_metrics(result: Any, objectives: Sequence[str]) -> dict[str, Any]:
    """The metrics ``result`` stands for in a job of ``objectives``.

    Raises:
        ResultError: it is none of a number, a dict holding every objective, or a tuple of
            the objectives' values.
    """
    names = ", ".join(objectives)
    if isinstance(result, Mapping):
        metrics = {str(key): value for key, value in result.items()}
        missing = [name for name in objectives if name not in metrics]
        if missing:
            raise ResultError(f"the objective function returned a dict without {missing[0]!r}:"
                              f" it must hold every objective of the job ({names})")
        return metrics
    if isinstance(result, tuple | list):
        if len(result) != len(objectives):
            raise ResultError(f"the objective function returned {len(result)} values for the "
                              f"job's {len(objectives)} objectives ({names})")
        return dict(zip(objectives, result, strict=True))
    value = _number(result)
    if value is None:
        shown = repr(result)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ResultError(f"the objective function returned {type(result).__name__} {shown}: "
                          f"expected a number (the objective {objectives[0]!r}), a dict of "
                          "metrics or a tuple of the objectives' values")
    if len(objectives) > 1:
        raise ResultError(f"the objective function returned one number, but the job has "
                          f"{len(objectives)} objectives ({names}): return a dict or a tuple")
    return {objectives[0]: value}


def _number(result: Any) -> float | int | None:
    """``result`` as a number: a real number (NumPy's too), or a 0-d array's item; else None."""
    if isinstance(result, bool):
        return None
    if isinstance(result, numbers.Real):
        return result  # type: ignore[return-value]
    if getattr(result, "shape", None) == () and callable(getattr(result, "item", None)):
        item = result.item()
        return item if isinstance(item, numbers.Real) and not isinstance(item, bool) else None
    return None


if __name__ == "__main__":
    sys.exit(main())
