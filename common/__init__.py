"""DisAuto's ground floor: the contracts every other package shares.

Everything here is imported by ``framework``, ``appcore``, ``apprunner_sdk``, ``submit`` and
``localmesos``, and imports none of them: Mesos resource arithmetic and task states, the trial
state, the search space and its proto form, the task environment, tokens, setting values, the
error taxonomy, the registry of named implementations and the gRPC server factory.
"""
