"""DisAuto's contract suites and test wiring, for its own tests and for a plug-in's.

What the rest of DisAuto relies on from an implementation it finds by name (docs/extending.md)
is written down once, as checks any implementation can be put through, inside the tree or
outside it:

* :mod:`disauto.testing.algorithms`: the search-algorithm contract
  (:class:`~disauto.appcore.algorithms.SearchAlgorithm`): the ``check_*`` functions, and
  :class:`~disauto.testing.algorithms.SearchAlgorithmContract`, a pytest base class that runs
  them all on a registered algorithm;
* :mod:`disauto.testing.backends`: the Bayesian-backend contract
  (:class:`~disauto.appcore.algorithms.bayesian.Backend`, the model behind ``bayesian``),
  with :class:`~disauto.testing.backends.BackendContract`;
* :mod:`disauto.testing.policies`: the offer-policy contract
  (:class:`~disauto.framework.policies.OfferPolicy`), likewise with
  :class:`~disauto.testing.policies.OfferPolicyContract`;
* :mod:`disauto.testing.inprocess`: a whole job in one process (the framework's controller and
  gRPC server, AppCore's loop and servicer; only Mesos absent), for tests and benchmarks.

A plug-in's test module::

    from disauto.appcore.algorithms import ALGORITHMS
    from disauto.testing.algorithms import SearchAlgorithmContract

    ALGORITHMS.register("my-search", "my_plugin.search:MySearch")


    class TestMySearch(SearchAlgorithmContract):
        NAME = "my-search"

These modules import pytest (the ``test`` extra); nothing of DisAuto's product imports them.
"""
