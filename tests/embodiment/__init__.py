"""Tests of embodiment."""
