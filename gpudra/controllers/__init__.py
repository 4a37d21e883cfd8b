"""The controller registry: for every kind that carries pod templates, what its controller does
with the nvidia.com/gpu limit convert removes, and what convert does about it (registry.yaml,
read and validated by gpudra.controllers.registry). Read by workloads (where the pod templates
are), convert (what to do), audit (how many GPU workloads sit in kinds nobody checked) and
docs/controllers.md (`gpudra controllers -o markdown`, gpudra.controllers.docs)."""
