"""The bundled example audited by `jaxcontam audit` (jaxcontam/examples/tiny_contaminated) and how it is built."""
