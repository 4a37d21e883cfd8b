"""gpudra cutover: the order of the switch from the device plugin to DRA, node pool by node
pool, as a runbook (docs/cutover.md)."""
