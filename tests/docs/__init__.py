"""Tests of the documentation site (issue 32)."""
