"""The migration journey (issue 32): the real control plane with kwok's node and pod lifecycle."""
