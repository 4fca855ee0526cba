"""``python -m specsim`` runs the command-line interface."""

import sys

from specsim.cli.main import main

sys.exit(main())
