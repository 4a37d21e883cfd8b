"""The Kubernetes model: objects, their fields and kinds, GPU use, and the tables they read."""
