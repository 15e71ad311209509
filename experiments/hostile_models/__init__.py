"""The hostile model files of issue 61 and what a checkout does with each."""
