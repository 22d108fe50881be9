"""export (moving into a package split by role; issue 34)."""

from analytics.export.figures import *  # noqa: F403
