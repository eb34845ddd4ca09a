"""Mesos' ACLs as the local authorizer decides them (``src/authorizer/local/authorizer.cpp``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.localmesos.cli_flags import UsageError
from disauto.localmesos.cli_flags import load_acls
from disauto.localmesos.master.authorizer import AclError
from disauto.localmesos.master.authorizer import Acls
from disauto.localmesos.master.authorizer import framework_roles
from disauto.localmesos.master.authorizer import parse_acls
from disauto.localmesos.master.authorizer import task_user


def test_no_acls_allow_everything_and_permissive_false_denies_what_no_acl_matches() -> None:
    assert Acls().may_register("anyone", ["ml"]) and Acls().may_run(None, "root")
    strict = parse_acls({"permissive": False, "register_frameworks": [
        {"principals": {"values": ["alice"]}, "roles": {"values": ["ml", "dev"]}}]})
    assert strict.may_register("alice", ["ml"]) and strict.may_register("alice", ["dev", "ml"])
    assert not strict.may_register("alice", ["ml", "prod"])  # every role must be allowed
    assert not strict.may_register("bob", ["ml"])  # no ACL matches bob: not permissive
    assert not strict.may_register(None, ["ml"])  # no principal is ANY: matches no SOME ACL


def test_the_first_matching_acl_decides_and_none_denies() -> None:
    acls = parse_acls({"run_tasks": [
        {"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}},
        {"principals": {"values": ["alice"]}, "users": {"type": "NONE"}},
        {"principals": {"type": "ANY"}, "users": {"type": "ANY"}}]})
    assert acls.may_run("alice", "alice")
    assert not acls.may_run("alice", "root")  # the second ACL matches first and says no
    assert acls.may_run("bob", "root") and acls.may_run(None, "root")


def test_view_roles_with_a_recursive_role() -> None:
    acls = parse_acls({"permissive": False, "view_roles": [
        {"principals": {"values": ["alice"]}, "roles": {"values": ["eng/%"]}},
        {"principals": {"values": ["alice"]}, "roles": {"values": ["*"]}}]})
    assert acls.may_view_role("alice", "eng/ml") and acls.may_view_role("alice", "eng/a/b")
    assert acls.may_view_role("alice", "*")
    assert not acls.may_view_role("alice", "eng") and not acls.may_view_role("alice", "ml")
    assert not acls.may_view_role("bob", "eng/ml")


def test_roles_and_users_as_mesos_reads_them() -> None:
    multi = {"roles": ["ml", "dev"], "role": "x", "capabilities": [{"type": "MULTI_ROLE"}]}
    assert framework_roles(multi) == ["dev", "ml"]
    assert framework_roles({"role": "x"}) == ["x"] and framework_roles({}) == ["*"]
    framework = {"user": "fw"}
    assert task_user({"command": {"user": "cmd"}}, framework) == "cmd"
    assert task_user({"executor": {"command": {"user": "ex"}}}, framework) == "ex"
    assert task_user({"command": {"value": "true"}}, framework) == "fw"


@pytest.mark.parametrize(("data", "message"), [
    ([], "expected a JSON object of ACLs"),
    ({"teardown_frameworks": []}, "teardown_frameworks: not enforced by this cluster"),
    ({"permissive": "no"}, "permissive: expected true or false"),
    ({"run_tasks": [{"principals": {"type": "ANY"}}]}, "run_tasks[0]: needs 'principals' and "
                                                        "'users'"),
    ({"view_roles": [{"principals": {"type": "SOME!"}, "roles": {}}]},
     "view_roles[0].principals.type: expected SOME, ANY or NONE"),
    ({"register_frameworks": [{"principals": {"values": "alice"}, "roles": {}}]},
     "register_frameworks[0].principals.values: expected a list of strings"),
])
def test_bad_acls_are_refused_in_one_line(data: object, message: str) -> None:
    with pytest.raises(AclError) as err:
        parse_acls(data)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_acl_file_of_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    path.write_text('{"permissive": false, "run_tasks": []}')
    assert load_acls(f"file://{path}").permissive is False
    path.write_text("{")
    with pytest.raises(UsageError, match=r"^--acls: .*acls.json: Expecting"):
        load_acls(str(path))
    with pytest.raises(UsageError, match="^--acls: cannot read"):
        load_acls(str(tmp_path / "missing.json"))
