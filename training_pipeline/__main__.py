import sys

from training_pipeline.cli import main

sys.exit(main())
