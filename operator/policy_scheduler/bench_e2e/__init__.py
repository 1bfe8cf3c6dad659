"""End-to-end scheduling benchmark on the dev cluster (issue 12): `python -m policy_scheduler.bench_e2e`."""
