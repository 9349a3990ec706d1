"""Python stacks and shapes in recordings of PyTorch builds without Kineto (Debian's python3-torch 1.13).

Their profiler keeps each op's Python stack (with_stack=True) and input shapes (record_shapes=True) in
memory, but its export_chrome_trace() writes neither. `enrich()` adds them to the exported trace as Kineto
writes them: `Call stack` (frames innermost first, joined by ";") and `Input Dims`. So CPU recordings point
at source lines.

Those builds have no Python tracer either, so the constructors object-built-in-step looks for (nn.Module,
optimizers, DataLoader, GradScaler) leave no frame. `record_constructors()` records each call of their
`__init__` as a range named as the Python tracer names that frame ("torch/nn/modules/module.py(309):
__init__"); `enrich()` marks those ranges `python_function`, with their stack.
"""

import importlib
import json
import os
import sys

# (module, class) whose __init__ object-built-in-step (PTA111) looks for.
_CONSTRUCTORS = (
    ("torch.nn", "Module"),
    ("torch.optim", "Optimizer"),
    ("torch.utils.data", "DataLoader"),
    ("torch.cuda.amp", "GradScaler"),
    ("torch.amp", "GradScaler"),
)


def needed(torch):
    """True when the profiler is the legacy one, whose export has no stacks or shapes."""
    try:
        return not torch.autograd.kineto_available()
    except AttributeError:
        return True


def _frame_name(code):
    """'torch/nn/modules/module.py(309): __init__', as the Python tracer names a frame."""
    path = code.co_filename.replace(os.sep, "/")
    cut = path.rfind("torch/")
    return "%s(%d): %s" % (path[cut:] if cut >= 0 else path, code.co_firstlineno, code.co_name)


def stack_lines_exact(torch):
    """Whether the legacy profiler's stacks carry the line running in each frame. PyTorch 1.13 on Python
    3.11 (Debian 12) records where the frame's function or block starts instead (it reads the frame's
    instruction offset the way older Pythons kept it). Found by recording one op at a known line; None when
    that recording fails."""
    try:
        with torch.autograd.profiler.profile(with_stack=True) as probe:
            line = sys._getframe().f_lineno + 1
            torch.zeros(1).add_(1)
        here = "%s(%d)" % (os.path.basename(__file__), line)
        frames = [frame for event in probe.function_events for frame in (getattr(event, "stack", None) or [])
                  if os.path.basename(__file__) in frame]
    except Exception:
        return None
    if not frames:
        return None
    return any(os.path.basename(frame.split(": ")[0]) == here for frame in frames)


def _range(torch, name):
    """A profiler range around a call: the low-level pair when present (no tensor of its own), else
    record_function."""
    ops = torch.ops.profiler
    try:
        enter, leave = ops._record_function_enter_new, ops._record_function_exit._RecordFunction
    except (AttributeError, RuntimeError):
        return torch.autograd.profiler.record_function(name)

    class _Range:
        def __enter__(self):
            self.handle = enter(name, None)

        def __exit__(self, *exc):
            leave(self.handle)
            return False

    return _Range()


def record_constructors(torch):
    """Wraps the constructors; returns the range names used."""
    names = set()
    for module_name, class_name in _CONSTRUCTORS:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        original = cls.__dict__.get("__init__")
        if original is None or getattr(original, "_ptadvise_range", None):
            continue
        name = _frame_name(original.__code__)
        names.add(name)
        cls.__init__ = _wrapped(torch, original, name)
    return names


def _wrapped(torch, original, name):
    def __init__(self, *args, **kwargs):
        with _range(torch, name):
            return original(self, *args, **kwargs)

    __init__._ptadvise_range = name
    __init__.__doc__ = original.__doc__
    __init__.__wrapped__ = original
    return __init__


# The capture's own files (this one, the runner, the shim): their frames are not the program's.
_OWN_FILES = frozenset(name for name in os.listdir(os.path.dirname(os.path.abspath(__file__))) if name.endswith(".py"))


def _own_frame(frame):
    """'ptadvise_torch_run.py(105): main' or with a longer path: a frame of the capture itself."""
    cut = frame.find("(")
    if cut <= 0:
        return False
    return os.path.basename(frame[:cut].replace("\\", "/")) in _OWN_FILES


def _same_event(written, name):
    # The export numbers the step ranges (ProfilerStep#3) that the events call ProfilerStep*.
    if written == name:
        return True
    return isinstance(written, str) and written.startswith("ProfilerStep#") and name.startswith("ProfilerStep")


def enrich(path, events, constructor_names):
    """Adds `Call stack`, `Input Dims` and the constructor ranges' category to the legacy trace at `path`,
    whose events were written in the order of `events` (the profiler's FunctionEvents). Returns False, and
    leaves the file as it is, when the two do not line up."""
    with open(path) as f:
        trace = json.load(f)
    if not isinstance(trace, list) or len(trace) != len(events):
        return False
    for record, event in zip(trace, events):
        if not isinstance(record, dict) or not _same_event(record.get("name"), event.name):
            return False
    for record, event in zip(trace, events):
        args = record.get("args")
        if not isinstance(args, dict):
            args = record["args"] = {}
        stack = [frame for frame in (getattr(event, "stack", None) or []) if not _own_frame(frame)]
        if stack:
            args["Call stack"] = ";".join(stack)
        shapes = getattr(event, "input_shapes", None)
        if shapes and any(shapes):
            args["Input Dims"] = [list(shape) for shape in shapes]
        if event.name in constructor_names:
            record["cat"] = "python_function"
    temporary = path + ".stacks"
    with open(temporary, "w") as f:
        json.dump(trace, f)
    os.replace(temporary, path)
    return True
