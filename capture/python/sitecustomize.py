"""Loaded by Python at startup when `ptadvise run` puts this directory first on PYTHONPATH.

It first runs the sitecustomize this one shadows (Debian ships one), then installs ptadvise's shim,
which waits for `import torch` (see ptadvise_shim.py).
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_shadowed_sitecustomize():
    search_path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", search_path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # theirs failing must not stop the program, as with Python's own import
        sys.stderr.write("ptadvise: warning: %s failed: %s\n" % (spec.origin, error))


_run_shadowed_sitecustomize()

if os.environ.get("PTADVISE_CAPTURE_BACKEND"):
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    import ptadvise_shim

    ptadvise_shim.install()
