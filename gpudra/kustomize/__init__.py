"""Kustomize trees as gpudra sees them: bases, overlays, components and their patches.

Core code (no CLI). `tree` reads kustomization files, `patches` reads patches and the device
requests in them, `build` follows resources through the tree the way kustomize accumulates
them, far enough to know which object each patch targets and what it is called there.
"""

import os
from collections.abc import Iterable

# The walk's (it reads what kustomizations name); from here, not `tree`, the rules (which only
# compare file names) import no yaml, and an audit of a tree without a kustomization loads none
# of the kustomize model.
from gpudra.sources.discovery import KUSTOMIZATION_FILES as KUSTOMIZATION_FILES  # re-exported


def roots_among(files: Iterable[str]) -> list[str]:
    """Directories with a kustomization file, from the files a scan listed (no second walk).

    A bare `Kustomization` file (no suffix) is not something the scan lists; it is followed
    when another kustomization refers to its directory. Looking for one in every directory
    would cost a stat each: ~0.1 s on a 7,000-directory tree.
    """
    return list(dict.fromkeys(os.path.normpath(os.path.dirname(f) or ".") for f in files
                              if os.path.basename(f) in KUSTOMIZATION_FILES))
