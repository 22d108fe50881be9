"""gate (moving into a package split by role; issue 34)."""

from analytics.gate.compute import *  # noqa: F403
