"""Real contamination of SmolLM2-135M-Instruct: arms trained with known contamination, audited, tabulated."""
