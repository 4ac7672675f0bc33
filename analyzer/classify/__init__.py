"""classify stage."""
