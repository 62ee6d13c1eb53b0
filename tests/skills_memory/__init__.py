"""Tests of skills_memory."""
