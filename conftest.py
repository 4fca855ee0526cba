"""Repository-level pytest configuration.

The timing harness imports torch, which only the optional ``harness`` extra
installs; without torch its modules are left out of doctest collection (the
harness tests skip themselves).
"""

import importlib.util
import os

# Under pytest-xdist (-n 2) each worker has one core: OpenMP and OpenBLAS pools of their own (torch's two threads per
# worker) would oversubscribe the machine and spin-wait, which made the CPU timing-harness tests 3x slower on a busy
# machine (the README's measure-loop: 150 s against 45 s).  Set before torch or numpy is imported; a caller's own
# setting is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["specsim/harness/*.py"]
