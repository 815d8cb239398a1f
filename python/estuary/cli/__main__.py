"""python -m estuary.cli (how the command line starts itself again under mpirun)."""
import sys

from . import main

sys.exit(main())
