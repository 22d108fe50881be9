"""``python -m analytics REPORT``: the reports of DESIGN.md on the command line (the ``cli`` package)."""

import sys

from cli import main

if __name__ == "__main__":
    sys.exit(main())
