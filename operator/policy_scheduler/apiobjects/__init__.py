"""Decoding Kubernetes API objects into the scheduler's compact model (no client library here)."""
