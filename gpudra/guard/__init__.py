"""`gpudra guard`: the namespace ratchet, a ValidatingAdmissionPolicy and its binding that keep
migrated namespaces off the device plugin (docs/guard.md)."""
