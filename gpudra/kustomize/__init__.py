"""Kustomize trees as gpudra sees them: bases, overlays, components and their patches.

Core code (no CLI). `tree` reads kustomization files, `patches` reads patches and the device
requests in them, `build` follows resources through the tree the way kustomize accumulates
them, far enough to know which object each patch targets and what it is called there.
"""
