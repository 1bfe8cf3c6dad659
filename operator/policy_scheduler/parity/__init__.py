"""Differential testing against kube-scheduler: random scenarios, one pod at a time.

generator/podspec build seeded scenarios; kubesched runs the reference scheduler and reads
its log; ours evaluates the same pod with our core; compare judges; runner drives a cluster.
"""
