"""Tests of export."""
