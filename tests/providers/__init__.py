"""Tests of providers."""
