"""jaxcontam against its peers on the same work (figures in docs/performance.md)."""
