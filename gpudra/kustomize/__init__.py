"""Kustomize trees as gpudra sees them: bases, overlays, components and their patches.

Core code (no CLI). `tree` reads kustomization files, `patches` reads patches and the device
requests in them, `build` follows resources through the tree the way kustomize accumulates
them, far enough to know which object each patch targets and what it is called there.
"""

# Here, not in `tree`, so that the rules (which only compare file names) do not import yaml.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
