"""Capacity planning for TPU slices without a TPU (`jaxcontam plan`): the audit's hot steps of jaxcontam's own
decoders compiled for a topology, with per-device memory, flops, collectives and a roofline estimate."""
