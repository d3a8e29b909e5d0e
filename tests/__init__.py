"""Tests of the approval-workflow service (a package so the repository root is importable)."""
