"""Tests of console."""
