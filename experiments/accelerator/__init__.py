"""The GPU check: scoring, generation, attention, the audit end to end and numerics on an accelerator (README.md)."""
