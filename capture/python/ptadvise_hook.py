"""Checks what torch.profiler records with ptadvise, from inside the training script, in one line:

    from ptadvise_hook import ptadvise_hook

    with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),
                                on_trace_ready=ptadvise_hook("traces")) as profiler:
        for batch in loader:
            train_step(batch)
            profiler.step()

Each time the profiler completes a recording, the hook writes the trace to DIR as
<host>_<pid>[.rank-R].step-N.pt.trace.json (through a temporary file and a rename) and runs
`ptadvise check` on it; ptadvise's report goes to the training log (stdout, or `log`).

This module lives in <prefix>/share/ptadvise/python (put that directory on sys.path or PYTHONPATH).
The ptadvise executable is `ptadvise=` when given, else $PTADVISE, else <prefix>/bin/ptadvise beside this
directory, else `ptadvise` on PATH.
"""

import os
import shutil
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)

from ptadvise_names import publish, trace_file_name  # noqa: E402  (needs the path above)


class PtadviseCheckFailed(RuntimeError):
    """Raised by the hook with raise_on_failure=True when `ptadvise check` exits non-zero."""


def find_ptadvise(explicit=None):
    """The ptadvise executable to run, or None."""
    for candidate in (explicit, os.environ.get("PTADVISE"),
                      os.path.join(_HERE, os.pardir, os.pardir, os.pardir, "bin", "ptadvise")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which("ptadvise")


def ptadvise_hook(dir_name="ptadvise-traces", args=(), ptadvise=None, log=None, raise_on_failure=False):
    """An on_trace_ready handler for torch.profiler.profile that writes the trace and checks it.

    dir_name: where traces are written (created when missing).
    args: extra `ptadvise check` arguments, e.g. ["--baseline", ".ptadvise-baseline.yaml"].
    ptadvise: path of the executable (see the module documentation for the default).
    log: a callable taking one line of text (e.g. logging.getLogger("train").info); default: print to stdout.
    raise_on_failure: raise PtadviseCheckFailed when the check exits non-zero (findings at or above
        --fail-on: 1; configuration, rule or trace error: 2); by default the report is only logged.
    """
    executable = find_ptadvise(ptadvise)
    emit = log if log is not None else (lambda line: print(line, flush=True))
    if executable is None:
        raise FileNotFoundError("ptadvise executable not found: pass ptadvise=PATH or set $PTADVISE")

    def handler(profiler):
        os.makedirs(dir_name, exist_ok=True)
        path = os.path.join(dir_name, trace_file_name(".step-%d" % profiler.step_num))
        publish(path, profiler.export_chrome_trace)
        colour = [] if any(str(arg).startswith("--color") for arg in args) else ["--color", "never"]
        command = [executable, "check", *colour, *args, path]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        emit("ptadvise: checked %s (exit %d)" % (path, result.returncode))
        for line in result.stdout.splitlines():
            emit(line)
        if raise_on_failure and result.returncode != 0:
            raise PtadviseCheckFailed("ptadvise check %s exited %d" % (path, result.returncode))

    return handler
