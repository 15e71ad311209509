"""The import path `jaxcontam.training.audit_callback` of earlier releases: the callback lives beside the audit core,
in `jaxcontam.detect.audit_callback` (also `jaxcontam.AuditCallback`)."""

from jaxcontam.detect.audit_callback import AuditCallback, AuditSettings, AuditTarget, audit_model, model_from_weights

__all__ = ["AuditCallback", "AuditSettings", "AuditTarget", "audit_model", "model_from_weights"]
