"""Trace file names shared by the capture backends and the torch.profiler hook."""

import os
import socket
import tempfile


def _first_int_env(names):
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def trace_file_name(suffix="", rank=None):
    """Same naming as the CUPTI capture: <host>_<pid>[.rank-R]<suffix>.pt.trace.json. R: the launcher's
    rank variable, else `rank` (a process group's rank, e.g. of torch.multiprocessing.spawn's processes)."""
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname()) or "host"
    from_env = _first_int_env(("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"))
    rank = from_env if from_env is not None else rank
    name = "%s_%d" % (host, os.getpid())
    if rank is not None:
        name += ".rank-%d" % rank
    return name + suffix + ".pt.trace.json"


def exclusive_temporary(path):
    """A new, empty file next to `path` to write it through, created exclusively under a random name
    (.NAME.XXXXXXXX.tmp): never a file or symlink someone planted at a predictable NAME.tmp."""
    directory, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=directory or ".")
    os.close(handle)
    return temporary


def publish(path, write):
    """Writes `path` through write(temporary) and a rename: readers never see half a file; on failure
    the temporary file is removed."""
    temporary = exclusive_temporary(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
