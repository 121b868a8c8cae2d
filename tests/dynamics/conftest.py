"""Make the dynamics tests' shared helpers importable whatever pytest's import mode."""

import sys
from pathlib import Path

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
