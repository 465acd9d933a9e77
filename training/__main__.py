"""``python -m revolution_training train --config configs/default.yaml``."""

import sys

from revolution_training.cli import main

sys.exit(main())
