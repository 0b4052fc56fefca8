"""`python -m tritonsmith` runs the command line (the editor starts `python -m tritonsmith serve`)."""

import sys

from .cli import main

sys.exit(main())
