"""gpudra: move Kubernetes GPU workloads from the NVIDIA device plugin to DRA."""

__version__ = "0.1.0"
