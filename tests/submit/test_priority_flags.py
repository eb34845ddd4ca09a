"""da-submit's offer-policy settings (``--policy-setting``, and ``--priority-setting``, its older
name) for the dynamic priority strategy and every policy, and jobs aimed at a loopback
da-cluster."""

from __future__ import annotations

from pathlib import Path
import sys

import pytest

from disauto.framework.policies import POLICIES
from disauto.protos import common_pb2
from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


def submission(*extra: str) -> common_pb2.JobSpec:
    return validate(build_parser().parse_args(argv(*extra))).config.search


@pytest.mark.usefixtures("files")
def test_dynamic_policies_turn_priorities_on_and_carry_the_settings() -> None:
    assert not submission().dynamic_priority and dict(submission().priority_settings) == {}
    for policy in ("dynamic", "dynamic-plus"):
        search = submission("--offer-policy", policy)
        assert search.dynamic_priority and dict(search.priority_settings) == {}
    # The two names of the flag fill one list.
    args = ["--offer-policy", "dynamic-plus", "--policy-setting", "k=3",
            "--priority-setting", " thresholds = 0.02,0.01", "--policy-setting",
            "declines_per_level=2", "--priority-setting", "pack_patience=0"]
    config = validate(build_parser().parse_args(argv() + args)).config
    assert dict(config.search.priority_settings) == {
        "k": "3", "thresholds": "0.02,0.01", "declines_per_level": "2", "pack_patience": "0"}
    # The framework's offer policy gets its own half; AppCore reads Algorithm 1's from the spec.
    assert config.offer_policy_settings == {"declines_per_level": "2", "pack_patience": "0"}


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--priority-setting", "k=2"],
         "--priority-setting: offer policy 'fifo' uses no priorities; use --offer-policy "
         "dynamic or dynamic-plus"),
        (["--offer-policy", "deadline", "--policy-setting", "k=2"],
         "--policy-setting: offer policy 'deadline' uses no priorities; use --offer-policy "
         "dynamic or dynamic-plus"),
        (["--offer-policy", "dynamic", "--policy-setting", "k=2", "--policy-setting", "k"],
         "--policy-setting: invalid value 'k': expected KEY=VALUE"),
        (["--offer-policy", "dynamic", "--policy-setting", "k=2", "--priority-setting", "k"],
         "--priority-setting: invalid value 'k': expected KEY=VALUE"),
        (["--offer-policy", "dynamic", "--priority-setting", "k=2", "--policy-setting",
          "colour=red"],
         "--policy-setting: unknown setting 'colour' for offer policy 'dynamic'"),
        (["--offer-policy", "deadline", "--policy-setting", "patience_seconds=soon"],
         "--policy-setting: setting 'patience_seconds' for offer policy 'deadline' must be a "
         "number of seconds >= 0, got 'soon'"),
        (["--offer-policy", "dynamic", "--priority-setting", "k"],
         "--priority-setting: invalid value 'k': expected KEY=VALUE"),
        (["--offer-policy", "dynamic", "--priority-setting", "colour=red"],
         "--priority-setting: unknown setting 'colour' for offer policy 'dynamic'; valid "
         "settings: decline_filter_seconds, declines_per_level, idle_repeats, k, m, placement, "
         "placement_exclude_seconds, placement_failures, placement_filter_seconds, "
         "placement_patience_seconds, placement_sample_age, placement_saturation, "
         "placement_slower, thresholds, tolerance"),
        (["--priority-setting", "placement=fast"],
         "setting 'placement' for offer policy 'fifo' must be 'none' or 'capability', got "
         "'fast'"),
        (["--priority-setting", "colour=red"],
         "unknown setting 'colour' for offer policy 'fifo'; valid settings: placement, "),
        (["--offer-policy", "dynamic", "--priority-setting", "pack_patience=2"],
         "unknown setting 'pack_patience' for offer policy 'dynamic'"),
        (["--offer-policy", "dynamic", "--priority-setting", "m=1"],
         "--priority-setting: setting 'm' for the dynamic priority strategy must be an integer "
         ">= 2, got '1'"),
        (["--offer-policy", "dynamic", "--priority-setting", "thresholds=0.1,x"],
         "must be comma-separated numbers > 0"),
        (["--offer-policy", "dynamic-plus", "--priority-setting", "idle_repeats=0"],
         "setting 'idle_repeats' for offer policy 'dynamic-plus' must be an integer >= 1, "
         "got '0'"),
    ],
)
def test_bad_policy_settings_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str],
                                                       extra: list[str], message: str) -> None:
    """The error names the flag as typed: either name, or with both the one of the bad item
    (the message says which) or the new name."""
    assert main(argv() + extra) == ExitStatus.USAGE
    err = capsys.readouterr().err.splitlines()
    typed = {flag for flag in extra if flag in ("--policy-setting", "--priority-setting")}
    flag = typed.pop() if len(typed) == 1 else message.split(":")[0]
    assert err[0].startswith(f"da-submit: error: {flag}: ") \
        and message in err[0], err[0]


def test_help_names_the_alias(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--policy-setting KEY=VALUE, --priority-setting KEY=VALUE" in text
    assert "--priority-setting is its older name, an alias" in text


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_setting_of_every_policy_reaches_the_framework(policy: str) -> None:
    """A registered policy's declared settings need nothing else to be given to a job."""
    declared = POLICIES[policy].SETTINGS
    args = ["--offer-policy", policy]
    for key, spec in declared.items():
        args += ["--policy-setting", f"{key}={spec.default}"]
    config = validate(build_parser().parse_args(argv() + args)).config
    assert config.offer_policy_settings == {key: spec.default for key, spec in declared.items()}


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize("master", ["127.0.0.1:5050", "localhost:5050", "local"])
def test_a_master_on_this_machine_runs_tasks_with_this_python(master: str) -> None:
    config = validate(build_parser().parse_args(argv("--master", master))).config
    assert config.appcore_command == f"{sys.executable} -m disauto.appcore"
    assert config.extra_env["PATH"].startswith(str(Path(sys.executable).parent))


@pytest.mark.usefixtures("files")
def test_placement_settings_reach_every_policy() -> None:
    for policy in ("fifo", "dynamic-plus"):
        config = validate(build_parser().parse_args(argv() + [
            "--offer-policy", policy, "--policy-setting", "placement=capability",
            "--policy-setting", "placement_saturation=0.8"])).config
        assert config.offer_policy_settings == {"placement": "capability",
                                                "placement_saturation": "0.8"}


@pytest.mark.usefixtures("files")
def test_a_remote_master_runs_tasks_with_the_agents_python() -> None:
    config = validate(build_parser().parse_args(argv("--master", "10.1.2.3:5050"))).config
    assert config.appcore_command == "python3 -m disauto.appcore" and config.extra_env == {}
    zk = validate(build_parser().parse_args(argv("--master", "zk://10.1.2.3:2181/mesos"))).config
    assert zk.appcore_command == "python3 -m disauto.appcore"
