"""`gpudra plan`: prove each claim matches real (or predicted) devices before the switch.

Public API: :func:`plan` with :class:`PlanOptions` -> :class:`PlanReport` (``to_json()``,
:func:`exit_code`); inventories from :func:`parse_inventory` (ResourceSlices) or
:func:`synthesize` (Node objects). Modules: inventory, synthesis, demand, matching (over
selector_text and selector_hints), capacity, resolve, allocate (over node_search, free_counts
and unplaced), report, engine.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use: verify's explanations need the engine and the inventory, not the
# synthesis from Node objects (issue 32: verify's start-up beyond the audit's).
_FROM = {"PlanOptions": "engine", "plan": "engine", "Device": "inventory",
         "Inventory": "inventory", "parse_inventory": "inventory", "PlanReport": "report",
         "exit_code": "report", "synthesize": "synthesis"}

__all__ = ["Device", "Inventory", "PlanOptions", "PlanReport", "exit_code", "parse_inventory",
           "plan", "synthesize"]


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
