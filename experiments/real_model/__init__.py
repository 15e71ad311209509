"""The audit of a real model (SmolLM2-135M-Instruct) on real benchmarks, and its tables."""
