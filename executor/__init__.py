"""The DisAuto executor: a warm slot's long-lived process on a Mesos agent.

Mesos launches it once per slot (a CUSTOM ``ExecutorInfo`` whose command is
``python3 -m disauto.executor``); each trial of the slot is a task of it, run as the user's
launch command in a fresh process group (:mod:`executor.process`), driven through pymesos'
``MesosExecutorDriver`` (:mod:`executor.slot`). It runs on agents: it imports only
``common`` and pymesos.
"""
