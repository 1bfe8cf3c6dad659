"""`python -m policy_scheduler`: the same as the `policy-scheduler` command."""

import sys

from policy_scheduler.app.cli import main

sys.exit(main())
