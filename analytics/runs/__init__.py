"""runs (moving into a package; issue 34)."""
