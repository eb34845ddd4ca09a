"""DisAuto: distributed hyperparameter search on Apache Mesos.

Installed, DisAuto's packages live under this one name (``disauto.framework``,
``disauto.appcore``, ``disauto.common``, ``disauto.submit``, ``disauto.localmesos``,
``disauto.protos``) so that generic names cannot collide with other distributions in
site-packages or in a training image. The repository keeps each package in its own top-level
folder; ``setup.py`` maps them here. The runner SDK stays ``apprunner_sdk``, as users' scripts
import it.
"""

__version__ = "0.1.0"
