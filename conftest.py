"""Repository-level pytest configuration.

The timing harness imports torch, which only the optional ``harness`` extra
installs; without torch its modules are left out of doctest collection (the
harness tests skip themselves).
"""

import importlib.util
import os
import sys

# Under pytest-xdist (-n 2) each worker has one core: OpenMP and OpenBLAS pools of their own (torch's two threads per
# worker) would oversubscribe the machine and spin-wait, which made the CPU timing-harness tests 3x slower on a busy
# machine (the README's measure-loop: 150 s against 45 s).  Set before torch or numpy is imported; a caller's own
# setting is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

# Each worker, and each notebook kernel or command a test starts, compiles every module it imports; where the
# environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), that compiling, and pytest's rewriting of every test
# module's asserts, is done again by every process of every run: 7 s of each worker's collection on the 2-core
# development machine.  The tests' own processes write it (to the __pycache__ folders git ignores), and so do the
# commands, notebook kernels and scripts they start, which inherit the environment: with the variable set, each of
# them compiled every module it imported, every time (a fresh clone's suite: 254 s with it, 217 s without).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["specsim/harness/*.py"]
