"""``python tests/oclgrind ...``: the runner and its commands (see :func:`oclgrind.runner.main`)."""

import sys
from pathlib import Path

# Run as `python tests/oclgrind`, Python puts this folder on sys.path; its parent instead
# makes the package importable as `oclgrind`.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from oclgrind.runner import main  # noqa: E402

sys.exit(main(sys.argv))
