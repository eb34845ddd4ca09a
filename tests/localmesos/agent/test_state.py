"""The agent is a façade over one state object and its parts: what each part is given, and
what the agent's public fields read and write."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from disauto.localmesos.agent.config import AgentConfig
from disauto.localmesos.agent.parts import AgentParts
from disauto.localmesos.agent.state import RUNNING
from tests.localmesos.agent_support import Master
from tests.localmesos.agent_support import make_agent


pytestmark = pytest.mark.integration  # an agent asks the Docker engine for orphans


def test_every_part_is_given_the_one_state_and_the_one_table_of_parts(
    tmp_path: Path
) -> None:
    agent = make_agent(tmp_path, Master(), config=AgentConfig(cpus=1, mem_mb=64, disk_mb=64,
                                                              gpus=1, gpu_indices=(4,)))
    try:
        named = {field.name: getattr(agent.parts, field.name)
                 for field in dataclasses.fields(AgentParts)
                 if field.name not in ("stop", "agent")}
        assert agent.parts.agent is agent
        for name, part in [*named.items(), ("executor_calls", agent.executor_calls)]:
            assert getattr(agent, name) is part
            assert part.state is agent.agent_state and part.parts is agent.parts
        assert agent.free_gpus == (4,)
        assert agent.agent_state.free_gpus == [4]
    finally:
        agent.stop()


def test_a_public_field_of_the_agent_is_its_state_field(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, Master())
    try:
        assert agent.id == agent.agent_state.id == "M-S0"
        assert agent.total is agent.agent_state.total
        agent.libprocess_id = "slave(3)"  # as the cluster names it
        assert agent.agent_state.libprocess_id == "slave(3)"
        agent.registered()
        assert agent.link_state == agent.agent_state.link_state == RUNNING
        assert not agent.recovering
        agent.crash()
        assert agent.recovering and agent.agent_state.recovering
    finally:
        agent.stop()
