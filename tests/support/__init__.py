"""Harness code the test directories share: manifests they write and ways to run gpudra."""
