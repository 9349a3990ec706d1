"""Trace file names shared by the capture backends and the torch.profiler hook."""

import os
import socket


def _first_int_env(names):
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def trace_file_name(suffix=""):
    """Same naming as the CUPTI capture: <host>_<pid>[.rank-R]<suffix>.pt.trace.json."""
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname()) or "host"
    rank = _first_int_env(("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"))
    name = "%s_%d" % (host, os.getpid())
    if rank is not None:
        name += ".rank-%d" % rank
    return name + suffix + ".pt.trace.json"
