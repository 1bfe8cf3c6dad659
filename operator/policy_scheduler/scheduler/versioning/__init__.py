"""Versioned semantics: which Kubernetes release the core decides like, and its feature gates.

`features.Features` is what plugins get through the Handle; `behaviour.Behaviour` names every
difference between releases that no gate controls; `version.KubernetesVersion` is a release;
`semantics` decides which release to follow from the API server's version and the operator's
flags; `flags` parses kube-scheduler's --feature-gates and --emulated-version.

Nothing is imported here: the command line parses --kubernetes-version with `version` alone,
without loading the gate tables.
"""
