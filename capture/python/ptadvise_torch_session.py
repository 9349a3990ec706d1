"""One process's torch.profiler recording for `ptadvise run --capture torch`.

The runner (ptadvise_torch_run.py) starts the recording of the process it runs the program in. Every other
Python process of the program that makes optimizer steps (the ranks torch.multiprocessing.spawn starts,
a trainer in a multiprocessing.Process) gets its own from the shim, at its first optimizer step: its
window skips what is left of --skip-steps and records the next --steps, as the runner's does, and is
written as <host>_<pid>[.rank-R].pt.trace.json (R: the RANK variable, else the rank of the initialised
process group). A process that ends inside its window writes what it recorded.

A program that runs a profiler of its own (torch.profiler.profile, torch.autograd.profiler.profile)
cannot run it beside this one: PyTorch allows one profiler per thread. When it starts one, the recording
stands aside (stopped, nothing of it written) and the first trace the program exports is copied to the
capture directory instead, so that the run checks what the program itself recorded.
"""

import atexit
import os
import shutil
import sys
import warnings

import ptadvise_legacy_stacks
from ptadvise_names import publish, trace_file_name

_current = None  # this process's Recording
_wrapped = [False]
_probing = [False]  # set while the runner's own probe records (ptadvise_legacy_stacks.stack_lines_exact)
_program = {}  # per process id: {"exports": [paths the program exported], "written": [their copies]}


def current():
    """The recording of this process (None in a process that has not started one, or a forked copy)."""
    return _current if _current is not None and _current.pid == os.getpid() else None


def _process_group_rank(torch):
    try:
        distributed = torch.distributed
        if distributed.is_available() and distributed.is_initialized():
            return distributed.get_rank()
    except Exception:  # a torch without torch.distributed, or a group being torn down
        pass
    return None


class Recording:
    def __init__(self, torch, out_dir, skip, steps):
        from torch.profiler import ProfilerActivity, profile, schedule

        self.torch = torch
        self.pid = os.getpid()
        self.out_dir = out_dir
        self.rank = _process_group_rank(torch)
        self.written = []
        self.stood_aside = False
        self.program_exports = []
        self.finished = False
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        # PyTorch without Kineto exports no stacks, shapes or Python frames: add them (ptadvise_legacy_stacks).
        self.legacy = ptadvise_legacy_stacks.needed(torch)
        self.constructors = ptadvise_legacy_stacks.record_constructors(torch) if self.legacy else set()
        if self.legacy and not os.environ.get("PTADVISE_STACK_LINES_CHECKED"):
            os.environ["PTADVISE_STACK_LINES_CHECKED"] = "1"  # said once, by the first process that records
            _probing[0] = True  # the probe's profiler is not the program's
            try:
                exact = ptadvise_legacy_stacks.stack_lines_exact(torch)
            finally:
                _probing[0] = False
            if exact is False:
                sys.stderr.write("ptadvise: warning: this PyTorch (%s) on Python %d.%d records, for each Python "
                                 "frame, the line where its function or block starts rather than the line "
                                 "running: the findings' source lines point there\n"
                                 % (torch.__version__, sys.version_info[0], sys.version_info[1]))
        # The last skipped step is the profiler's warm-up: its own start-up cost stays out of the record.
        with warnings.catch_warnings():
            # "Profiler won't be using warmup": --skip-steps 0 asks for none (the program's own warnings pass).
            warnings.filterwarnings("ignore", message=".*warmup.*", category=UserWarning)
            plan = schedule(wait=max(skip - 1, 0), warmup=1 if skip > 0 else 0,
                            active=steps if steps > 0 else 1 << 30, repeat=1)
            self.profiler = profile(activities=activities, schedule=plan, on_trace_ready=self._on_trace_ready,
                                    record_shapes=True, with_stack=True)

    def _file_name(self):
        return trace_file_name(rank=self.rank)

    def _export(self, temporary, profiler):
        profiler.export_chrome_trace(temporary)
        if self.legacy and not ptadvise_legacy_stacks.enrich(temporary, list(profiler.events()), self.constructors):
            sys.stderr.write("ptadvise: the profiler's events do not match its export; the trace has no Python "
                             "stacks\n")

    def _on_trace_ready(self, profiler):
        if self.stood_aside:
            return  # stopped for the program's own profiler: a cut window, not written
        path = os.path.join(self.out_dir, self._file_name())
        publish(path, lambda temporary: self._export(temporary, profiler))
        self.written.append(path)

    def start(self):
        self.profiler.start()

    def step(self):
        if self.rank is None:  # a group initialised after the recording began
            self.rank = _process_group_rank(self.torch)
        if not self.stood_aside and not self.finished:
            self.profiler.step()

    def finish(self):
        """Saves the window when it is still recording (the process ends inside it)."""
        if self.finished:
            return
        self.finished = True
        if not self.stood_aside:
            self.profiler.stop()

    def stand_aside(self):
        if self.stood_aside or self.finished:
            return
        self.stood_aside = True
        self.profiler.stop()


def program_profiles():
    """Whether the program has started a profiler of its own in this process."""
    return os.getpid() in _program


def program_exports():
    """The traces the program exported in this process, and the copies of them written for the check."""
    state = _program.get(os.getpid(), {"exports": [], "written": []})
    return state["exports"], state["written"]


def _program_started(torch):
    if os.getpid() in _program:
        return
    _program[os.getpid()] = {"exports": [], "written": []}
    sys.stderr.write("ptadvise: the program starts a profiler of its own (process %d); ptadvise's recording stands "
                     "aside and the first trace the program exports is checked\n" % os.getpid())
    recording = current()
    if recording is not None:
        recording.stand_aside()


def _program_exported(torch, path):
    state = _program.get(os.getpid())
    if state is None or not isinstance(path, (str, bytes, os.PathLike)) or not os.path.isfile(path):
        return
    state["exports"].append(path)
    if len(state["exports"]) > 1:
        return
    with open(path, "rb") as source:
        gzipped = source.read(2) == b"\x1f\x8b"
    recording = current()
    rank = recording.rank if recording is not None and recording.rank is not None else _process_group_rank(torch)
    copy = os.path.join(os.environ.get("PTADVISE_CAPTURE_DIR", "."), trace_file_name(rank=rank))
    copy += ".gz" if gzipped else ""
    publish(copy, lambda temporary: shutil.copyfile(path, temporary))
    state["written"].append(copy)


def install(torch):
    """Wraps the profilers' start and export methods once per interpreter, so that a program starting a
    profiler of its own (in any of its processes) is seen: the recording of that process stands aside, none
    is begun there, and the first trace the program exports is copied for the check. This runner's own
    profiler is told apart by identity; torch.profiler's schedule moves it through prepare_trace and
    start_trace, never through __enter__."""
    if _wrapped[0]:
        return
    _wrapped[0] = True
    import torch.autograd.profiler as autograd_profiler
    import torch.profiler.profiler as profiler_module

    def before(method):
        def wrapper(self, *args, **kwargs):
            recording = current()
            if not _probing[0] and (recording is None or self is not recording.profiler):
                _program_started(torch)
            return method(self, *args, **kwargs)
        return wrapper

    def after_export(method):
        def wrapper(self, path, *args, **kwargs):
            result = method(self, path, *args, **kwargs)
            recording = current()
            if _probing[0]:
                return result
            if recording is None or recording.stood_aside:  # this runner's own exports are not the program's
                _program_exported(torch, path)
            return result
        return wrapper

    # emit_nvtx/emit_itt (CUDA/Intel builds) enable the same per-thread profiler, in a mode that exports nothing.
    starts = [(profiler_module, "profile", "start"), (profiler_module, "_KinetoProfile", "start"),
              (autograd_profiler, "profile", "__enter__"), (autograd_profiler, "emit_nvtx", "__enter__"),
              (autograd_profiler, "emit_itt", "__enter__")]
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


def begin(torch, out_dir, skip, steps):
    """Starts this process's recording: `skip` more optimizer steps left out, then `steps` recorded."""
    global _current
    install(torch)
    recording = Recording(torch, out_dir, skip, steps)
    _current = recording
    recording.start()
    return recording


def after_step(torch, steps_done, skip, steps):
    """The shim's call after every optimizer step of any process (torch backend)."""
    global _current
    recording = current()
    if recording is not None:
        try:
            recording.step()
        except Exception as error:  # the profiler refused (another one left enabled): the program must still run
            if not recording.finished:
                recording.finished = True
                sys.stderr.write("ptadvise: warning: the recording of process %d stopped (%s: %s)\n"
                                 % (os.getpid(), type(error).__name__, error))
        return
    if _current is not None and _current.pid == -1:
        return  # this process could not record (said once)
    if program_profiles():
        return  # the program records this process itself
    if steps > 0 and steps_done >= skip + steps:
        return  # its window is over before it began
    try:
        recording = begin(torch, os.environ.get("PTADVISE_CAPTURE_DIR", "."), max(skip - steps_done, 0), steps)
    except Exception as error:  # e.g. a profiler left enabled in a forked copy: the program must still run
        sys.stderr.write("ptadvise: warning: process %d makes optimizer steps but could not be recorded (%s: %s)\n"
                         % (os.getpid(), type(error).__name__, error))

        class _Unrecorded:
            pid = -1
        _current = _Unrecorded()
        return
    atexit.register(recording.finish)
