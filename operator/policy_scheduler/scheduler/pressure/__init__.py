"""The kubelet's node-pressure eviction as a pure model (issue 35; docs/pressure.md).

Ported from kubernetes v1.37.2 pkg/kubelet/eviction (identical to v1.35.4 in everything
modelled here). Inputs are plain data (observations.NodeStats, PodUsage, pods.PodFacts,
thresholds.KubeletEvictionSettings); converters from API shapes live in apiobjects/.

The package re-exports nothing: the command line names the signals (`signals.py`) to build its
parser, and importing the whole model would import numpy for every command, `run` included.
"""
