"""Tests of looprl.experiments."""
