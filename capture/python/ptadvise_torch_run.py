"""Runs a Python program under torch.profiler for `ptadvise run --capture torch`.

    python3 ptadvise_torch_run.py SCRIPT [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]

The schedule follows the optimizer: the first PTADVISE_SKIP_STEPS optimizer steps are skipped (the last
of them as the profiler's warm-up), the next PTADVISE_STEPS are recorded (0: until the program ends).
The profiler's own trace is written to PTADVISE_CAPTURE_DIR as <host>_<pid>[.rank-R].pt.trace.json,
through a temporary file created exclusively under a random name, and a rename. The program's exit status is kept.
The other Python processes of the program that train are recorded too, and a program running a profiler of
its own has its own trace checked (ptadvise_torch_session.py).
"""

import glob
import os
import runpy
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)

import ptadvise_shim  # noqa: E402  (needs the path above)
import ptadvise_torch_session  # noqa: E402

ptadvise_shim.install()  # idempotent; covers interpreters started without site (-S, -I)


def _int_env(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _usage():
    sys.stderr.write("usage: ptadvise_torch_run.py SCRIPT [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]\n")
    return 2


def _traces_since(out_dir, start):
    """Traces in out_dir written since `start` (this process's or the program's other processes')."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(out_dir), "*.pt.trace.json*")):
        try:
            if os.path.getmtime(path) >= start:
                found.append(path)
        except OSError:
            pass
    return found


def main(argv):
    if not argv:
        return _usage()
    out_dir = os.environ.get("PTADVISE_CAPTURE_DIR", ".")
    skip = max(_int_env("PTADVISE_SKIP_STEPS", 0), 0)
    steps = max(_int_env("PTADVISE_STEPS", 0), 0)
    started = time.time() - 1  # file times can be coarser than the clock

    import torch

    exit_status = 0
    recording = ptadvise_torch_session.begin(torch, out_dir, skip, steps)
    try:
        # sys.path[0] as the interpreter would set it: the working directory for -m, -c and a script read
        # from stdin, the script's directory for a script (not this runner's directory).
        if argv[0] == "-m" and len(argv) > 1:
            sys.argv = [argv[1]] + argv[2:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c" and len(argv) > 1:
            sys.argv = ["-c"] + argv[2:]
            sys.path[0] = ""
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv[0] == "-":
            sys.argv = list(argv)
            sys.path[0] = ""
            exec(compile(sys.stdin.read(), "<stdin>", "exec"), {"__name__": "__main__"})
        else:
            script = argv[0]
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        exit_status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            sys.stderr.write("%s\n" % code)
    finally:
        recording.finish()  # saves the window when it is still recording (the program ended inside it)
    exports, copies = ptadvise_torch_session.program_exports()
    if len(exports) > 1:
        sys.stderr.write("ptadvise: the program exported %d traces; the first is checked\n" % len(exports))
    if recording.written or copies or _traces_since(out_dir, started):
        return exit_status
    if ptadvise_torch_session.program_profiles():
        sys.stderr.write("ptadvise: the program ran a profiler of its own and exported no trace; no trace written\n")
    else:
        sys.stderr.write("ptadvise: the program ended after %d optimizer steps, before the recording window "
                         "(--skip-steps %d); no trace written\n" % (ptadvise_shim._steps_done, skip))
    return exit_status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
