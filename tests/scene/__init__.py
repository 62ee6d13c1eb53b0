"""Tests of scene."""
