"""Resource names the core treats specially (core/v1 ResourceName values)."""

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
