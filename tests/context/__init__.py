"""Tests of context."""
