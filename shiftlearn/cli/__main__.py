"""``python -m shiftlearn.cli``: the same as the ``shiftlearn`` command."""

import sys

from . import main

sys.exit(main())
