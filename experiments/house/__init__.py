"""Checks that a restructuring left behaviour unchanged: the bundled summary.json, the report's screenshots."""
