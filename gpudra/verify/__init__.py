"""gpudra verify: after applying, is every GPU workload allocated and running, why not, and
can the device plugin be removed? (docs/cutover.md)"""
