"""`python -m orch8` runs the CLI."""

import sys

from .cli import main

sys.exit(main())
