"""Dynamic Resource Allocation: the resource.k8s.io/v1 objects the scheduler reads and upstream's
structured allocator (k8s.io/dynamic-resource-allocation/structured, v0.35.4), pure Python."""
