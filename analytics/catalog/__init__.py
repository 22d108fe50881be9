"""catalog (moving into a package split by role; issue 34)."""

from analytics.catalog.load import *  # noqa: F403
