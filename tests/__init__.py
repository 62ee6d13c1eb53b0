"""The project's tests, by package (``tests/conftest.py``: the shared fixtures and the two
tiers' hooks; ``tests/tiers.py``: which tests the fast tier leaves out).

Compiled bytecode is kept while the tests run, even where ``PYTHONDONTWRITEBYTECODE`` is
set in the environment (as .ci/run keeps it by unsetting it): this package is imported
before ``tests/conftest.py`` imports any of the project, and before the xdist workers and
the tests' own subprocesses (about a hundred ``harness`` commands, servers and workers)
start. Without it, every worker and every subprocess compiles the project from source
again: about 4 s of CPU in each worker of the fast tier, and a second in many a subprocess.
``python -B`` alone (without the variable) is still honoured.
"""

from __future__ import annotations

import os
import sys

if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False
