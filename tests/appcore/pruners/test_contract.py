"""Every registered early-stopping rule keeps the contract of :class:`~appcore.pruners.Pruner`,
as AppCore's trial loop relies on it (``appcore/loop.py``):

* ``report`` answers a bool for every report a runner may send: steps out of order or again,
  values that are not finite, reports of a trial that has ended, trials interleaved;
* ``finish`` takes every way a trial ends, also of a trial that never reported;
* the direction is honoured: minimizing ``v`` decides as maximizing ``-v``;
* a rule restored from the record (``restore``) decides what the original decides;
* settings are refused in one line naming the setting and what is valid, never by another
  exception; ``describe`` is one line (it goes into the trial's message).

A made-up rule that keeps the contract passes every check; one that breaks a rule fails its check.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import math

import pytest

from disauto.appcore.algorithms import Direction
from disauto.appcore.pruners import PRUNERS
from disauto.appcore.pruners import Pruner
from disauto.appcore.pruners import PrunerRecord
from disauto.appcore.pruners import pruner_class
from disauto.common.errors import InvalidSettingsError
from disauto.common.setting_values import SettingSpec
from disauto.common.setting_values import int_setting
from disauto.common.trial_state import TrialState
from tests.appcore.pruners.curves import curve
from tests.appcore.pruners.curves import run_trial


FINALS = (0.9, 0.7, 0.8, 0.3, 0.95, 0.2, 0.85, 0.1)
"""The final values of a search's trials, good and bad in turn, so that every rule prunes some
with its default settings."""

BAD_VALUES = ("not a value", "", "-7", "1e400", "nan")

Make = Callable[[Direction], Pruner]
"""A fresh rule for the given direction."""


def _bool(answer: object, what: str) -> bool:
    assert type(answer) is bool, f"{what} answered {answer!r}, not a bool"
    return answer


def _search(pruner: Pruner, sign: float = 1.0, finals: Sequence[float] = FINALS
            ) -> list[int | None]:
    """Each trial's curve reported in turn (times ``sign``): the step each was pruned at."""
    return [run_trial(pruner, number, sign * final)
            for number, final in enumerate(finals, start=1)]


def check_every_report_gets_a_bool(make: Make) -> None:
    pruner = make("maximize")
    for number, final in enumerate(FINALS[:4], start=1):
        for step, value in curve(final):
            _bool(pruner.report(number, step, value), f"trial {number} step {step}")
        pruner.finish(number, TrialState.COMPLETED, final)
    odd = [(5, 0, 0.5), (5, 0, 0.5), (5, 3, 0.4), (5, 2, 0.6), (5, -1, 0.5),
           (5, 4, math.nan), (5, 5, math.inf), (5, 6, -math.inf), (6, 0, 0.1), (5, 7, 0.5),
           (6, 1, 0.05), (1, 9, 0.9)]  # out of order, again, not finite, interleaved, ended
    for number, step, value in odd:
        try:
            _bool(pruner.report(number, step, value), f"report({number}, {step}, {value})")
        except AssertionError:
            raise
        except Exception as err:  # noqa: BLE001 - what escapes is what is wrong
            raise AssertionError(f"report({number}, {step}, {value}) raised "
                                 f"{type(err).__name__}: {err}") from None


def check_finish_takes_every_outcome(make: Make) -> None:
    pruner = make("maximize")
    endings = ((TrialState.COMPLETED, 0.9), (TrialState.FAILED, None),
               (TrialState.PRUNED, None), (TrialState.KILLED, None), (TrialState.TIMEOUT, None))
    for number, (state, value) in enumerate(endings, start=1):
        pruner.report(number, 0, 0.5)
        pruner.finish(number, state, value)
    pruner.finish(len(endings) + 1, TrialState.FAILED, None)  # never reported
    _bool(pruner.report(len(endings) + 2, 0, 0.5), "a report after those endings")


def check_the_direction_is_honoured(make: Make) -> None:
    maximizing = _search(make("maximize"))
    assert _search(make("minimize"), sign=-1.0) == maximizing, \
        "minimizing -v decided otherwise than maximizing v"


def check_restore_rebuilds_the_decisions(make: Make) -> None:
    """Six trials ended and a seventh ran two steps when AppCore restarted."""
    original = make("maximize")
    history = []
    for number, final in enumerate(FINALS[:6], start=1):
        stopped = run_trial(original, number, final)
        reported = curve(final)[: None if stopped is None else stopped + 1]
        state = TrialState.COMPLETED if stopped is None else TrialState.PRUNED
        history.append(PrunerRecord(number, state, tuple(reported),
                                    final if stopped is None else None))
    running = curve(0.15)
    for step, value in running[:2]:
        original.report(7, step, value)
    history.append(PrunerRecord(7, TrialState.RUNNING, tuple(running[:2])))
    restored = make("maximize")
    restored.restore(history)
    for step, value in running[2:]:
        decision = original.report(7, step, value)
        assert restored.report(7, step, value) == decision, \
            f"after the restart trial 7's step {step} was decided otherwise"
    assert run_trial(restored, 8, 0.25) == run_trial(original, 8, 0.25), \
        "after the restart a new trial was decided otherwise"


def check_settings_are_checked(cls: type[Pruner]) -> None:
    parsed = cls.parse_settings({})
    assert set(parsed) == set(cls.SETTINGS), "the defaults do not give every setting"
    valid = ", ".join(sorted(cls.SETTINGS)) or "none"
    try:
        cls(direction="maximize", settings={"bogus": "1"})
    except InvalidSettingsError as err:
        assert str(err) == (f"unknown setting 'bogus' for early-stopping rule '{cls.NAME}'; "
                            f"valid settings: {valid}"), str(err)
    else:
        raise AssertionError("an unknown setting was accepted")
    for name, spec in cls.SETTINGS.items():
        assert spec.valid and spec.help, f"setting {name!r} has no valid text or no help"
        for text in BAD_VALUES:
            try:
                cls.parse_settings({name: text})
            except InvalidSettingsError as err:
                assert "\n" not in str(err) and f"setting {name!r}" in str(err) \
                    and spec.valid in str(err), f"setting {name!r} = {text!r}: {err}"
            except Exception as err:  # noqa: BLE001 - what escapes is what is wrong
                raise AssertionError(f"setting {name!r} = {text!r} raised "
                                     f"{type(err).__name__}: {err}") from None


def check_the_description_is_one_line(make: Make) -> None:
    text = make("maximize").describe()
    assert text.strip() and "\n" not in text, f"describe() is {text!r}"


CHECKS: dict[str, Callable[[type[Pruner]], None]] = {
    "reports": lambda cls: check_every_report_gets_a_bool(_maker(cls)),
    "endings": lambda cls: check_finish_takes_every_outcome(_maker(cls)),
    "direction": lambda cls: check_the_direction_is_honoured(_maker(cls)),
    "restore": lambda cls: check_restore_rebuilds_the_decisions(_maker(cls)),
    "settings": check_settings_are_checked,
    "description": lambda cls: check_the_description_is_one_line(_maker(cls)),
}


def _maker(cls: type[Pruner]) -> Make:
    return lambda direction: cls(direction=direction, settings={})


@pytest.fixture(params=sorted(PRUNERS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_registry_names_each_rule_by_its_name(name: str) -> None:
    cls = pruner_class(name)
    assert issubclass(cls, Pruner) and cls.NAME == name


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_rule_keeps_the_contract(name: str, check: str) -> None:
    CHECKS[check](pruner_class(name))


def test_the_scenario_makes_the_rules_prune() -> None:
    """The direction and restore checks compare decisions: with no rule pruning at all they
    would compare nothing."""
    for name in PRUNERS:
        if name != "none":
            assert any(step is not None for step in _search(_maker(pruner_class(name))(
                "maximize"))), f"{name} pruned nothing in the scenario"


# -- the checks are not vacuous -------------------------------------------------------------------


class Sound(Pruner):
    """A made-up rule that keeps the contract: stops a trial worse at a step than every
    completed trial was there, once ``after`` trials completed."""

    NAME = "sound"
    SETTINGS: Mapping[str, SettingSpec] = {"after": int_setting(2, 1, "completed trials first")}

    def __init__(self, *, direction: Direction, settings: Mapping[str, str]) -> None:
        super().__init__(direction=direction, settings=settings)
        self._curves: dict[int, dict[int, float]] = {}
        self._completed: list[dict[int, float]] = []

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.direction == "maximize" else a < b

    def report(self, trial: int, step: int, value: float) -> bool:
        if not math.isfinite(value):
            return False
        self._curves.setdefault(trial, {})[step] = value
        at_step = [done[step] for done in self._completed if step in done]
        return len(self._completed) >= self.settings["after"] and len(at_step) > 0 \
            and all(self._better(other, value) for other in at_step)

    def finish(self, trial: int, state: TrialState, value: float | None) -> None:
        curve_ = self._curves.pop(trial, {})
        if state == TrialState.COMPLETED:
            self._completed.append(curve_)


class NotABool(Sound):
    def report(self, trial: int, step: int, value: float) -> bool:
        return int(super().report(trial, step, value))  # type: ignore[return-value]


class TripsOnNaN(Sound):
    def report(self, trial: int, step: int, value: float) -> bool:
        if math.isnan(value):
            raise ValueError("nan")
        return super().report(trial, step, value)


class IgnoresTheDirection(Sound):
    def _better(self, a: float, b: float) -> bool:
        return a > b


class ForgetsTheRecord(Sound):
    def restore(self, history: Sequence[PrunerRecord]) -> None:
        pass


class LeaksAnError(Sound):
    SETTINGS: Mapping[str, SettingSpec] = {
        "after": SettingSpec("2", lambda text: {"2": 2}[text], "2", "made up")}


class SaysTooMuch(Sound):
    def describe(self) -> str:
        return "the rule\nthat says too much"


BROKEN: dict[type[Pruner], str] = {
    NotABool: "reports", TripsOnNaN: "reports", IgnoresTheDirection: "direction",
    ForgetsTheRecord: "restore", LeaksAnError: "settings", SaysTooMuch: "description",
}


def test_a_made_up_rule_that_keeps_the_contract_passes_every_check() -> None:
    assert any(step is not None for step in _search(Sound(direction="maximize", settings={})))
    for check in CHECKS.values():
        check(Sound)


@pytest.mark.parametrize("broken", sorted(BROKEN, key=lambda cls: cls.__name__),
                         ids=lambda cls: cls.__name__)
def test_a_rule_that_breaks_the_contract_fails_its_check(broken: type[Pruner]) -> None:
    with pytest.raises(AssertionError):
        CHECKS[BROKEN[broken]](broken)
