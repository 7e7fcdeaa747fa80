"""Bounded autonomy: budget caps, drives (curiosity, pursuit) and the judge."""
