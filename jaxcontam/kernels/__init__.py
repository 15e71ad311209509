"""The vocabulary head's blockwise log-softmax: the plain-jnp path (`vocab_blocks`) and, beside it, its fused
Pallas kernel (`vocab_logprobs`). The engine imports these; they import nothing from `jaxcontam.engine`."""
