"""scorers (moving into a package split by role; issue 34)."""

from analytics.scorers.load import *  # noqa: F403
