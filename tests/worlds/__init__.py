"""Tests of worlds."""
