"""The weight dtypes `load_model` takes, by name: the one list, kept free of JAX so that the commands' `--dtype`
choices and the audit config's check read it without bringing JAX in."""

DTYPES = ("float32", "bfloat16")
