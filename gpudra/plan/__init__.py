"""`gpudra plan`: prove each claim matches real (or predicted) devices before the switch.

Public API: :func:`plan` with :class:`PlanOptions` -> :class:`PlanReport` (``to_json()``,
:func:`exit_code`); inventories from :func:`parse_inventory` (ResourceSlices) or
:func:`synthesize` (Node objects). Modules: inventory, synthesis, demand, matching (over
selector_text and selector_hints), capacity, resolve, allocate (over node_search, free_counts
and unplaced), report, engine.
"""

from gpudra.plan.engine import PlanOptions, plan
from gpudra.plan.inventory import Device, Inventory, parse_inventory
from gpudra.plan.report import PlanReport, exit_code
from gpudra.plan.synthesis import synthesize

__all__ = ["Device", "Inventory", "PlanOptions", "PlanReport", "exit_code", "parse_inventory",
           "plan", "synthesize"]
