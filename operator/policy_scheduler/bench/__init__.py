"""In-memory scheduling benchmarks (`python -m policy_scheduler.bench`)."""
