"""localmesos: an embedded, single-machine Mesos master and agents (see docs/local-mode.md).

Six rooms, split as apache/mesos splits its own: :mod:`~localmesos.master` (the master, its
allocator and views), :mod:`~localmesos.agent` (the agent, its launch path and executor host),
:mod:`~localmesos.containerizer` (processes and containers of tasks), :mod:`~localmesos.protocol`
(what they all speak), :mod:`~localmesos.server` (the one HTTP server) and
:mod:`~localmesos.webui` (the page's files). :mod:`~localmesos.cluster` puts them together, as
``da-cluster`` (:mod:`~localmesos.cli`) and ``--master local`` run it.

It stands on ``common`` and ``protos`` alone, and of the other packages only ``submit.local``
imports it; inside, the master and the agent meet only through ``protocol`` and the cluster's
callbacks (``tests/test_architecture.py`` keeps all three so).
"""
