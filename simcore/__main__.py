"""``python -m simcore``: see :mod:`simcore.cli`."""

import sys

from .cli import main

sys.exit(main())
