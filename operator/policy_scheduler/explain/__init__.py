"""`policy-scheduler explain`: why a pod is pending, or why its node won."""
