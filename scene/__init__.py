"""scene package."""
