"""``python -m simcore``: see :mod:`simcore.cli.main`."""

import sys

from .cli.main import main

sys.exit(main())
