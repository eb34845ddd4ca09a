"""The master is a façade over one state object and its parts: what each part is given, and
what ``master.<field>`` reads and writes."""

from __future__ import annotations

import dataclasses
import time

from disauto.localmesos.master.master import Master
from disauto.localmesos.master.parts import MasterParts
from disauto.localmesos.master.state import MasterState


def test_every_part_is_given_the_one_state_and_the_one_table_of_parts() -> None:
    master = Master()
    named = {field.name: getattr(master.parts, field.name)
             for field in dataclasses.fields(MasterParts)}
    assert set(named) == {"subscriptions", "calls", "launch", "tasks", "allocation",
                          "maintenance", "drain", "partitions"}
    for name, part in [*named.items(), ("quota", master.quota)]:
        assert getattr(master, name) is part
        assert part.state is master.state and part.parts is master.parts


def test_a_field_of_the_master_is_its_state_field_read_and_written() -> None:
    master = Master(hostname="10.0.0.7")
    assert master.frameworks is master.state.frameworks
    assert master.lock is master.state.lock
    master.set_address("10.0.0.8", 5050)
    assert master.pid == master.state.pid == "master@10.0.0.8:5050"
    master.recovering = True  # as an elected master recovering its registry does
    master.leader_address = "10.0.0.9:5050"
    assert master.state.recovering and master.state.leader_address == "10.0.0.9:5050"
    names = {field.name for field in dataclasses.fields(MasterState)}
    assert [name for name in names if not isinstance(getattr(Master, name), property)] == []


def test_the_state_counts_and_knows_how_long_recovered_agents_may_come_back() -> None:
    state = MasterState(agent_ping_timeout=2.0, max_agent_ping_timeouts=3)
    state.count("messages_register_slave")
    state.count("messages_register_slave", 2)
    assert state.metrics == {"messages_register_slave": 3}
    assert state.total_ping_timeout == 6.0
    assert not state.awaits_recovered_agents()
    state.recovered_agents["S1"] = {"hostname": "h"}
    state.recovered_until = time.monotonic() + 60
    assert state.awaits_recovered_agents()
    state.recovered_until = time.monotonic() - 1
    assert not state.awaits_recovered_agents()


def test_a_master_stopped_without_starting_stops_at_once() -> None:
    master = Master()
    master.stop()
    assert master.state.stopped and not master.state.started
