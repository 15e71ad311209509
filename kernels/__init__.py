"""Fused accelerator kernels (Pallas), each beside its plain-jnp reference in `jaxcontam.engine`."""
