"""plan (moving into a package split by role; issue 34)."""

from analytics.plan.compute import *  # noqa: F403
