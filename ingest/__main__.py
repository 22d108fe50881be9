"""``python -m ingest``: load run logs (or the demo dataset) into the Runlens database (the command line is
``cli/ingest.py``)."""

import sys

from cli.ingest import main

if __name__ == "__main__":
    sys.exit(main())
