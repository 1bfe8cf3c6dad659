"""Node pressure against the live cluster: usage read from metrics.k8s.io and, where allowed, the
kubelets (sources), turned into the core model's inputs (samples), kept between polls by the
operator (monitor) and relieved under EvictionPolicies (relief). docs/pressure.md.
"""
