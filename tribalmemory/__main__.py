"""``python -m tribalmemory``: the same as the ``tribalmemory`` command."""

import sys

from .cli.main import main

sys.exit(main())
