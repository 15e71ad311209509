"""jaxcontam's per-choice log-likelihoods against lm-eval's on the same requests."""
