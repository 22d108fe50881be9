"""leaderboard (moving into a package split by role; issue 34)."""

from analytics.leaderboard.compute import *  # noqa: F403
