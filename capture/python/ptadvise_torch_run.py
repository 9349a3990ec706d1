"""Runs a Python program under torch.profiler for `ptadvise run --capture torch`.

    python3 ptadvise_torch_run.py SCRIPT [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]

The schedule follows the optimizer: the first PTADVISE_SKIP_STEPS optimizer steps are skipped (the last
of them as the profiler's warm-up), the next PTADVISE_STEPS are recorded (0: until the program ends).
The profiler's own trace is written to PTADVISE_CAPTURE_DIR as <host>_<pid>[.rank-R].pt.trace.json,
through a temporary file created exclusively under a random name, and a rename. The program's exit status is kept.

A program that runs a profiler of its own (torch.profiler.profile, torch.autograd.profiler.profile) cannot
run it beside this one: PyTorch allows one profiler per thread. When it starts one, this recording stands
aside (stopped, nothing of it written) and the first trace the program exports is copied to
PTADVISE_CAPTURE_DIR instead, so that the run checks what the program itself recorded.
"""

import os
import runpy
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)

import ptadvise_legacy_stacks  # noqa: E402  (needs the path above)
import ptadvise_shim  # noqa: E402
from ptadvise_names import publish, trace_file_name  # noqa: E402

ptadvise_shim.install()  # idempotent; covers interpreters started without site (-S, -I)


def _int_env(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _usage():
    sys.stderr.write("usage: ptadvise_torch_run.py SCRIPT [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]\n")
    return 2


def _wrap_program_profilers(torch, stand_aside, exported):
    """Calls stand_aside() before the program starts a profiler of its own, and exported(path) after each
    trace it exports. This runner's own profiler is started before, and never calls the wrapped methods
    again (torch.profiler's schedule moves through prepare_trace/start_trace)."""
    import torch.autograd.profiler as autograd_profiler
    import torch.profiler.profiler as profiler_module

    def before(method):
        def wrapper(self, *args, **kwargs):
            stand_aside()
            return method(self, *args, **kwargs)
        return wrapper

    def after_export(method):
        def wrapper(self, path, *args, **kwargs):
            result = method(self, path, *args, **kwargs)
            exported(path)
            return result
        return wrapper

    starts = [(profiler_module, "profile", "start"), (profiler_module, "_KinetoProfile", "start"),
              (autograd_profiler, "profile", "__enter__")]
    # Every export ends in the autograd profiler's (torch.profiler's, a .gz included, writes through it).
    exports = [(autograd_profiler, "profile", "export_chrome_trace")]
    legacy = getattr(torch.autograd, "profiler_legacy", None)
    if legacy is not None:
        starts.append((legacy, "profile", "__enter__"))
        exports.append((legacy, "profile", "export_chrome_trace"))
    for module, class_name, method_name in starts:
        cls = getattr(module, class_name, None)
        if cls is not None and method_name in vars(cls):
            setattr(cls, method_name, before(vars(cls)[method_name]))
    for module, class_name, method_name in exports:
        cls = getattr(module, class_name, None)
        if cls is not None and method_name in vars(cls):
            setattr(cls, method_name, after_export(vars(cls)[method_name]))


def main(argv):
    if not argv:
        return _usage()
    out_dir = os.environ.get("PTADVISE_CAPTURE_DIR", ".")
    skip = max(_int_env("PTADVISE_SKIP_STEPS", 0), 0)
    steps = max(_int_env("PTADVISE_STEPS", 0), 0)

    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    written = []

    # PyTorch without Kineto exports no stacks, shapes or Python frames: add them (ptadvise_legacy_stacks).
    legacy = ptadvise_legacy_stacks.needed(torch)
    constructors = ptadvise_legacy_stacks.record_constructors(torch) if legacy else set()

    def export(temporary, profiler):
        profiler.export_chrome_trace(temporary)
        if legacy and not ptadvise_legacy_stacks.enrich(temporary, list(profiler.events()), constructors):
            sys.stderr.write("ptadvise: the profiler's events do not match its export; the trace has no Python "
                             "stacks\n")

    stood_aside = []     # set once the program has started a profiler of its own
    program_exports = []  # the traces the program exported after that

    def on_trace_ready(profiler):
        if stood_aside:
            return  # stopped for the program's own profiler: a cut window, not written
        path = os.path.join(out_dir, trace_file_name())
        publish(path, lambda temporary: export(temporary, profiler))
        written.append(path)

    # The last skipped step is the profiler's warm-up: its own start-up cost stays out of the record.
    plan = schedule(wait=max(skip - 1, 0), warmup=1 if skip > 0 else 0, active=steps if steps > 0 else 1 << 30,
                    repeat=1)
    profiler = profile(activities=activities, schedule=plan, on_trace_ready=on_trace_ready, record_shapes=True,
                       with_stack=True)
    ptadvise_shim.add_step_listener(lambda steps_done: None if stood_aside else profiler.step())

    def stand_aside():
        if stood_aside:
            return
        stood_aside.append(True)
        sys.stderr.write("ptadvise: the program starts a profiler of its own; ptadvise's recording stands aside "
                         "and the first trace the program exports is checked\n")
        profiler.stop()

    def copy_program_export(path):
        if not stood_aside or not isinstance(path, (str, bytes, os.PathLike)) or not os.path.isfile(path):
            return
        program_exports.append(path)
        if len(program_exports) > 1:
            return
        with open(path, "rb") as source:
            gzipped = source.read(2) == b"\x1f\x8b"
        copy = os.path.join(out_dir, trace_file_name()) + (".gz" if gzipped else "")
        publish(copy, lambda temporary: shutil.copyfile(path, temporary))
        written.append(copy)

    exit_status = 0
    profiler.start()
    _wrap_program_profilers(torch, stand_aside, copy_program_export)  # after this runner's own start
    try:
        if argv[0] == "-m" and len(argv) > 1:
            sys.argv = [argv[1]] + argv[2:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c" and len(argv) > 1:
            sys.argv = ["-c"] + argv[2:]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
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
        # Saves the window when it is still recording (the program ended inside it).
        if not stood_aside:
            profiler.stop()
    if len(program_exports) > 1:
        sys.stderr.write("ptadvise: the program exported %d traces; the first is checked\n" % len(program_exports))
    if stood_aside and not written:
        sys.stderr.write("ptadvise: the program ran a profiler of its own and exported no trace; no trace written\n")
        return exit_status
    if not written:
        sys.stderr.write("ptadvise: the program ended after %d optimizer steps, before the recording window "
                         "(--skip-steps %d); no trace written\n" % (ptadvise_shim._steps_done, skip))
    return exit_status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
