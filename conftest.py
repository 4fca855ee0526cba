"""Repository-level pytest configuration.

The timing harness imports torch, which only the optional ``harness`` extra
installs; without torch its modules are left out of doctest collection (the
harness tests skip themselves).
"""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["specsim/harness/*.py"]
