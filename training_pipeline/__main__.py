"""`python -m training_pipeline`: the CLI, as the `training-pipeline` script runs it.

`-m` puts the working directory first on `sys.path`; it is taken off before anything else is
imported, so a module that happens to lie where the command is run (named like one the CLI imports, or
one a config file names) is never imported into the pipeline's process.
"""

import os
import sys

sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", os.getcwd())]

from training_pipeline.cli import main  # noqa: E402

sys.exit(main())
