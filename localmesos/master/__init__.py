"""The embedded Mesos master (apache/mesos ``src/master/``): frameworks, offers and tasks,
driven by scheduler calls.

:mod:`~localmesos.master.master` is the :class:`~localmesos.master.master.Master`, a façade over
one declared state (:mod:`~localmesos.master.state`) and a part per concern, which call each
other through the protocols of :mod:`~localmesos.master.parts`:
:mod:`~localmesos.master.subscriptions` (SUBSCRIBE, disconnection, failover),
:mod:`~localmesos.master.calls` (the call dispatch table and every call but ACCEPT),
:mod:`~localmesos.master.launch` (ACCEPT, with the task checks of
:mod:`~localmesos.master.task_validation`), :mod:`~localmesos.master.tasks` (book-keeping as
agents report) and :mod:`~localmesos.master.offers` (allocation runs and offers, with the DRF
:mod:`~localmesos.master.allocator`, :mod:`~localmesos.master.offer_constraints` and
:mod:`~localmesos.master.offer_timeout`). :mod:`~localmesos.master.records` holds what it knows,
:mod:`~localmesos.master.agent_link` its ordered calls into each agent and
:mod:`~localmesos.master.validation` the checks of scheduler calls;
:mod:`localmesos.master.views` renders it for the read-only endpoints. The master knows an agent
only as :class:`~localmesos.master.agent_link.AgentLike`; it stands on
:mod:`localmesos.protocol` alone (``tests/test_architecture.py``).
"""
