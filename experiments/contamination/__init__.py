"""Controlled contamination: tiny models trained with a known contaminated subset, each detector scored against it."""
