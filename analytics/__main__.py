"""``python -m analytics REPORT``: the reports of DESIGN.md on the command line (registry: analytics/cli.py)."""

import sys

from analytics.cli import main

if __name__ == "__main__":
    sys.exit(main())
