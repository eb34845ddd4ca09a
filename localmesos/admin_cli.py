"""``da-cluster agent``: restart, partition or heal one agent of a running ``da-cluster``.

Example::

    da-cluster agent list --master 127.0.0.1:5050
    da-cluster agent restart <agent id> --master 127.0.0.1:5050 [--for 5s]
    da-cluster agent partition <agent id> --master 127.0.0.1:5050 [--for 20s]
    da-cluster agent heal <agent id> --master 127.0.0.1:5050

Not Mesos commands: on a real cluster one restarts an agent's process or cuts its network; the
embedded cluster does it when told through its admin endpoint
(:mod:`localmesos.server.admin_routes`). Draining is Mesos' own operator call (DRAIN_AGENT on
``/api/v1``). With a cluster started with ``--credentials``, pass the same file: the first
principal of it is used. Every error is one line, ``da-cluster agent: error: ...`` (exit 2
for a bad flag, 1 when the cluster refuses or cannot be reached).
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import Sequence
import difflib
import http.client
import json
import sys
from typing import NoReturn
from urllib.parse import quote

from disauto.common import durations
from disauto.localmesos.cli_flags import UsageError
from disauto.localmesos.cli_flags import load_credentials


PROG = "da-cluster agent"
ACTIONS = ("list", "restart", "partition", "heal")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _action(word: str) -> str:
    """``word`` when it names an action; else argparse's refusal with a did-you-mean, as
    Python 3.12's ``suggest_on_error`` words it (this package runs on 3.11).

    Raises:
        argparse.ArgumentTypeError: ``word`` is no action.
    """
    if word in ACTIONS:
        return word
    close = difflib.get_close_matches(word, ACTIONS, n=1)
    maybe = f", maybe you meant {close[0]!r}?" if close else ""
    choices = ", ".join(repr(a) for a in ACTIONS)
    raise argparse.ArgumentTypeError(f"invalid choice: {word!r}{maybe} (choose from {choices})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Restart, partition or heal an agent of a running "
                                            "da-cluster (not Mesos calls: docs/local-mode.md).")
    parser.add_argument("action", type=_action, choices=ACTIONS, help="what to do")
    parser.add_argument("agent_id", nargs="?", help="the agent (da-cluster agent list)")
    parser.add_argument("--master", required=True, metavar="HOST:PORT",
                        help="the da-cluster's address")
    parser.add_argument("--for", dest="duration", metavar="DURATION",
                        help="restart: how long the agent stays down; partition: how long the "
                             "network stays cut (default: until healed)")
    parser.add_argument("--credentials", help="the da-cluster's --credentials file")
    return parser


def _request(args: argparse.Namespace) -> tuple[str, str]:
    """The method and path of the admin call.

    Raises:
        UsageError: a missing agent, a bad duration, ``--for`` where it means nothing.
    """
    if args.action == "list":
        return "GET", "/localmesos/agents"
    if not args.agent_id:
        raise UsageError(f"{args.action} needs an agent id (da-cluster agent list --master ...)")
    path = f"/localmesos/agents/{quote(args.agent_id, safe='')}/{args.action}"
    if args.duration is not None:
        if args.action == "heal":
            raise UsageError("--for: heal takes no duration")
        try:
            durations.parse_duration(args.duration)
        except durations.DurationError as exc:
            raise UsageError(f"--for: {exc}") from None
        path += f"?for={quote(args.duration)}"
    return "POST", path


def _headers(args: argparse.Namespace) -> dict[str, str]:
    if args.credentials is None:
        return {}
    principal, secret = next(iter(load_credentials(args.credentials).items()))
    token = base64.b64encode(f"{principal}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _master(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise UsageError(f"--master: invalid address {text!r}: expected HOST:PORT")
    return host, int(port)


def _describe(args: argparse.Namespace, body: bytes) -> str:
    if args.action == "list":
        agents = json.loads(body)["agents"]
        lines = [f"{a['id']}  {a['hostname']}{'  (partitioned)' if a['partitioned'] else ''}"
                 for a in agents]
        return "\n".join(lines) if lines else "no agents"
    done = {"restart": "restarts", "partition": "is cut off", "heal": "is reachable again"}
    suffix = f" for {args.duration}" if args.duration else ""
    return f"agent {args.agent_id} {done[args.action]}{suffix}"


def main(argv: Sequence[str]) -> int:
    """Run ``da-cluster agent ...``; returns the exit status."""
    try:
        args = build_parser().parse_args(list(argv))
        host, port = _master(args.master)
        method, path = _request(args)
        headers = _headers(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request(method, path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
    except OSError as exc:
        print(f"{PROG}: error: cannot reach {args.master}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    finally:
        conn.close()
    if resp.status != 200:
        reason = body.decode(errors="replace").strip() or resp.reason
        print(f"{PROG}: error: {args.master} answered {resp.status}: {reason}", file=sys.stderr)
        return 1
    print(_describe(args, body))
    return 0
