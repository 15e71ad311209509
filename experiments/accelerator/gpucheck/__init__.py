"""The GPU check's sections, one module each, assembled by `experiments.accelerator.check`."""
