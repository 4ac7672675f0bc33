"""signatures stage."""
