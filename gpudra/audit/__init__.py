"""The audit: every registered checker over what a source yields, into one Report (`engine`),
and the command's use case over it (`run`: files, one cluster or many, the baseline, the report
ConfigMap)."""

from gpudra.audit.engine import AuditRequest, audit, audit_cluster, run_audit

__all__ = ["AuditRequest", "audit", "audit_cluster", "run_audit"]
