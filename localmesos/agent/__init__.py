"""The embedded Mesos agent (apache/mesos ``src/slave/``): what runs the tasks the master
places on it.

:mod:`~localmesos.agent.agent` is the :class:`~localmesos.agent.agent.Agent` (its resources,
its tasks' life and what it reports), a façade over one declared state
(:mod:`~localmesos.agent.state`) and a part per concern, which call each other through the
protocols of :mod:`~localmesos.agent.parts`; :mod:`~localmesos.agent.launch` is the launch
path of one task (sandbox, fetch, GPUs, then a process or a container of
:mod:`localmesos.containerizer`);
:mod:`~localmesos.agent.executors` hosts custom executors and serves their v1 executor API
(:mod:`~localmesos.agent.executor_api`); :mod:`~localmesos.agent.status_updates` keeps each
task's updates reliable, :mod:`~localmesos.agent.sandbox` lays out and serves sandboxes,
:mod:`~localmesos.agent.fetcher` fetches URIs and :mod:`~localmesos.agent.health` runs health
checks. The agent knows the master only through the callbacks the cluster gives it; it stands
on :mod:`localmesos.protocol` and :mod:`localmesos.containerizer` (``tests/test_architecture.py``).
"""
