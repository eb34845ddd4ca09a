"""What the embedded master, its agents and their clients all speak (apache/mesos
``src/common/`` and ``include/mesos/v1/mesos.proto``).

:mod:`~localmesos.protocol.protojson` turns a JSON body into the normalized form of a proto
message as stout does (with the shared messages of :mod:`~localmesos.protocol.messages`;
each API adds its own calls), :mod:`~localmesos.protocol.validation` holds the checks Mesos
shares between its master and agents (IDs, UUIDs, health checks),
:mod:`~localmesos.protocol.recordio` frames event streams and
:mod:`~localmesos.protocol.media_types` names what is served. Nothing here imports the master,
the agent or the containerizer; they all import it (``tests/test_architecture.py``).
"""
