"""Tests of mcp."""
