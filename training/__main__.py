"""``python -m training train --config configs/default.yaml``."""

import sys

from .cli import main

sys.exit(main())
