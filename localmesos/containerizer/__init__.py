"""How an embedded agent starts and confines a task's process (apache/mesos
``src/slave/containerizer/``).

:mod:`~localmesos.containerizer.command` runs a command as a process group (Mesos' posix
launcher, with the command executor's environment), :mod:`~localmesos.containerizer.docker`
runs one in a container of the local Docker engine (:mod:`~localmesos.containerizer.request`
says which container), :mod:`~localmesos.containerizer.cpu_quota` gives a slowed agent's
processes their CPU share (a cgroup CFS quota), :mod:`~localmesos.containerizer.gpus` finds the
machine's GPUs and :mod:`~localmesos.containerizer.monitor` measures what a process tree or a
container uses. Nothing here knows of the master or the agent: the agent
(:mod:`localmesos.agent`) calls in, and ``tests/test_architecture.py`` keeps it so.
"""
