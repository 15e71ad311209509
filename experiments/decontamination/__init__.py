"""Decontamination's recall, precision, short items and scale against lm-eval's and datatrove's rules."""
