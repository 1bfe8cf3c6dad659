import sys

from policy_scheduler.parity.cli import main

sys.exit(main())
