"""correlate stage."""
