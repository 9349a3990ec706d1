"""Python side of `ptadvise run`: NVTX ranges that give a CUPTI-only trace its steps and source lines.

Loaded by this directory's sitecustomize.py when `ptadvise run` starts a Python program. Nothing here
runs until the program imports torch. Range names (docs/CAPTURE.md is the contract with the analysis):

  ProfilerStep#N                                  one training step, ended when every live optimizer stepped
  enumerate(DataLoader)#<IterClass>.__next__      waiting for the next batch
  ptadvise.sync <call> <file>:<line>              Tensor.item / .cpu / .tolist on a GPU tensor

Ranges go to NVTX through torch.cuda.nvtx (CUPTI records them as MARKER activity). When the variable
PTADVISE_SHIM_LOG names a file, each range is also appended to it ("push NAME" / "pop NAME"), which is
how the shim is tested on machines without CUDA.
"""

import os
import sys
import threading
import weakref

_BACKEND = os.environ.get("PTADVISE_CAPTURE_BACKEND", "")
_LOG_PATH = os.environ.get("PTADVISE_SHIM_LOG", "")


def _int_env(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


_SKIP_STEPS = _int_env("PTADVISE_SKIP_STEPS", 0)
_STEPS = _int_env("PTADVISE_STEPS", 0)

_lock = threading.Lock()
_log_file = None
_nvtx = None  # torch.cuda.nvtx when this torch build has NVTX
_steps_done = 0
_step_range_open = False
_recording_broken = []  # set when this process's torch recording failed (said once)
_installed = False
_display_paths = {}
_optimizers = weakref.WeakSet()  # the program's live optimizers
_stepped = set()  # ids of the optimizers that stepped in this iteration
_cwd = os.getcwd()


def _log(line):
    global _log_file
    if not _LOG_PATH:
        return
    with _lock:
        if _log_file is None:
            _log_file = open(_LOG_PATH, "a", buffering=1, encoding="utf-8")
        _log_file.write(line + "\n")


def range_push(name):
    if _nvtx is not None:
        _nvtx.range_push(name)
    if _LOG_PATH:
        _log("push " + name)


def range_pop(name):
    if _nvtx is not None:
        _nvtx.range_pop()
    if _LOG_PATH:
        _log("pop " + name)


def step_range_name(number):
    return "ProfilerStep#%d" % number


def source_location(frame):
    """'train.py:42' for a frame: the path relative to the working directory when it is inside it."""
    filename = frame.f_code.co_filename
    shown = _display_paths.get(filename)
    if shown is None:
        absolute = os.path.abspath(filename)
        shown = os.path.relpath(absolute, _cwd) if absolute.startswith(_cwd + os.sep) else absolute
        _display_paths[filename] = shown
    return "%s:%d" % (shown, frame.f_lineno)


def sync_range_name(call, frame):
    return "ptadvise.sync %s %s" % (call, source_location(frame))


def _ranges_enabled():
    # Under torch.profiler the trace already has steps and stacks; NVTX ranges are for CUPTI captures.
    return _BACKEND != "torch"


def _open_step_range():
    global _step_range_open
    if _ranges_enabled():
        range_push(step_range_name(_steps_done))
    _step_range_open = True


def _set_capture_active(active):
    """Starts or stops the CUPTI capture (libptadvise_cupti.so) for --skip-steps / --steps."""
    library = os.environ.get("CUDA_INJECTION64_PATH")
    if _BACKEND != "cupti" or not library:
        return
    try:
        import ctypes

        ctypes.CDLL(library).ptadvise_capture_set_active(1 if active else 0)
    except (OSError, AttributeError):
        pass
    _log("capture " + ("on" if active else "off"))


def on_step_end():
    """Called once per optimizer step, after the step."""
    global _steps_done, _step_range_open
    if _step_range_open and _ranges_enabled():
        range_pop(step_range_name(_steps_done))
    _step_range_open = False
    _steps_done += 1
    if _SKIP_STEPS > 0 and _steps_done == _SKIP_STEPS:
        _set_capture_active(True)
    if _STEPS > 0 and _steps_done == _SKIP_STEPS + _STEPS:
        _set_capture_active(False)
    if _BACKEND == "torch" and not _recording_broken:
        # Each process that trains records its own window (the runner's, started with the program, included).
        try:
            import ptadvise_torch_session

            ptadvise_torch_session.after_step(sys.modules["torch"], _steps_done, _SKIP_STEPS, _STEPS)
        except Exception as error:  # never the program's failure
            _recording_broken.append(True)
            sys.stderr.write("ptadvise: warning: process %d is not recorded (%s: %s)\n"
                             % (os.getpid(), type(error).__name__, error))
    _open_step_range()


def on_optimizer_step(optimizer):
    """Called after each optimizer's step. An iteration ends when every live optimizer has stepped (a GAN's
    discriminator and generator make one iteration, not two); when one steps again first, another live
    optimizer does not step every iteration, and the iteration ends with this step."""
    key = id(optimizer)
    if key in _stepped:
        _stepped.clear()
        _stepped.add(key)  # where the next iteration's count starts: the steps keep one period
        on_step_end()
        return
    _stepped.add(key)
    try:
        live = set(id(o) for o in _optimizers)
    except Exception:  # an optimizer class whose instances cannot be weakly referenced or hashed
        live = set()
    if live <= _stepped:
        _stepped.clear()
        on_step_end()


def _patch_optimizer(torch):
    optimizer_class = torch.optim.Optimizer
    original_init = optimizer_class.__init__
    wrap_step = False

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            _optimizers.add(self)
        except TypeError:
            pass
        if not wrap_step:
            return
        cls = type(self)
        step = cls.step
        if getattr(step, "_ptadvise_wrapped", False):
            return

        def wrapped_step(*step_args, **step_kwargs):
            try:
                return step(*step_args, **step_kwargs)
            finally:
                on_optimizer_step(step_args[0] if step_args else None)

        wrapped_step._ptadvise_wrapped = True
        cls.step = wrapped_step

    optimizer_class.__init__ = __init__
    optimizer_module = sys.modules.get("torch.optim.optimizer")
    register = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if register is not None:  # torch >= 2.0
        register(lambda optimizer, args, kwargs: on_optimizer_step(optimizer))
        return
    if hasattr(optimizer_class, "_optimizer_step_code"):
        # torch 1.x calls this empty hook right after every Optimizer.step (for the profiler).
        original = optimizer_class._optimizer_step_code

        def _optimizer_step_code(self):
            original(self)
            on_optimizer_step(self)

        optimizer_class._optimizer_step_code = _optimizer_step_code
        return
    wrap_step = True


def _patch_dataloader(torch):
    iterator_class = torch.utils.data.dataloader._BaseDataLoaderIter
    original_next = iterator_class.__next__

    def __next__(self):
        if not _step_range_open:
            _open_step_range()
        if not _ranges_enabled():
            return original_next(self)
        name = getattr(self, "_profile_name", None) or "enumerate(DataLoader)#%s.__next__" % type(self).__name__
        range_push(name)
        try:
            return original_next(self)
        finally:
            range_pop(name)

    iterator_class.__next__ = __next__


def _patch_sync_calls(torch):
    tensor_class = torch.Tensor

    def wrap(call):
        original = getattr(tensor_class, call)

        def wrapper(self, *args, **kwargs):
            # Only a GPU tensor makes the host wait; CPU tensors pass straight through.
            if self.is_cuda:
                name = sync_range_name(call, sys._getframe(1))
                range_push(name)
                try:
                    return original(self, *args, **kwargs)
                finally:
                    range_pop(name)
            return original(self, *args, **kwargs)

        wrapper.__name__ = call
        wrapper.__doc__ = original.__doc__
        setattr(tensor_class, call, wrapper)

    for call in ("item", "cpu", "tolist"):
        wrap(call)


def _patch_profiler(torch):
    """torch.profiler inside a CUPTI capture: both want CUPTI's single subscriber slot."""
    if _BACKEND != "cupti":
        return
    profile_class = torch.profiler.profile
    original_start = profile_class.start
    warned = []

    def start(self, *args, **kwargs):
        if not warned:
            warned.append(True)
            message = ("torch.profiler runs inside this program: it and ptadvise's CUPTI capture cannot both "
                       "own CUPTI; run `ptadvise check` on the profiler's own trace instead")
            sys.stderr.write("ptadvise: warning: " + message + "\n")
            directory = os.environ.get("PTADVISE_CAPTURE_DIR", ".")
            try:
                with open(os.path.join(directory, "python_%d.status" % os.getpid()), "w") as status:
                    status.write(message + "\n")
            except OSError:
                pass
        return original_start(self, *args, **kwargs)

    profile_class.start = start


def patch_torch(torch):
    """Installs every hook on an imported torch module; never breaks the program."""
    global _nvtx, _installed
    if _installed:
        return
    _installed = True
    try:
        if hasattr(torch._C, "_nvtx"):
            import torch.cuda.nvtx as nvtx

            _nvtx = nvtx
        _patch_optimizer(torch)
        _patch_dataloader(torch)
        if _ranges_enabled():
            _patch_sync_calls(torch)
        _patch_profiler(torch)
        if _BACKEND == "torch":
            import ptadvise_torch_session  # a program profiling itself, in any of its processes

            ptadvise_torch_session.install(torch)
    except Exception as error:  # a torch version we do not know: the program must still run
        sys.stderr.write("ptadvise: warning: the Python shim could not hook torch (%s: %s)\n"
                         % (type(error).__name__, error))


class _TorchImportHook:
    """Meta path finder that patches torch right after `import torch` executes, without importing it
    earlier (programs that never use torch pay nothing)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original_exec = spec.loader.exec_module

        def exec_module(module):
            original_exec(module)
            patch_torch(module)

        spec.loader.exec_module = exec_module
        return spec


def install():
    if "torch" in sys.modules:
        patch_torch(sys.modules["torch"])
    elif not any(isinstance(finder, _TorchImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TorchImportHook())
