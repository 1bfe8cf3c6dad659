"""`python -m policy_scheduler.devcluster {up,down,status,build}`."""

from policy_scheduler.devcluster.cli import main

raise SystemExit(main())
