"""Evicting the victims that preemption chose, as the profile's EvictionPolicy allows.

api: the Eviction API calls and what their answers mean; limiter: a policy's rate limits;
runner: evicting one preemptor's victims; dry_run: reporting what would be evicted;
nominations: waiting for and clearing a preemptor's nomination; evictor: the jobs, their
gating and requeueing.
"""
