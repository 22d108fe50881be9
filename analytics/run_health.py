"""run_health (moving into analytics.runs; issue 34)."""

from analytics.runs.load import *  # noqa: F403
