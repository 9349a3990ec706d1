"""The process model behind the scenario traces: `Sim` keeps the host threads' clocks and the GPU stream's
queue of one training process, and emits the Kineto events of what it runs (Python frames, CPU ops, CUDA
runtime calls, kernels, copies, allocator events). See make_scenarios.py for how the traces are made."""

from __future__ import annotations

import contextlib
import random

from scenario_tables import DEVICES

PID = 48213          # the training process
MAIN_TID = 48213     # its main thread
AUTOGRAD_TID = 48391  # the autograd engine's CUDA device thread
STREAM = 7           # CUDA default stream as Kineto numbers it
BASE_TIME_NS = 1716301500000000000
START_US = 2_481_337.0  # first timestamp, µs after BASE_TIME_NS


class Sim:
    """Clocks, ids and event emission for one process with one GPU stream. Times are integer ns."""

    def __init__(self, device_key: str, seed: int):
        self.device_key = device_key
        self.rng = random.Random(seed)
        self.now = {MAIN_TID: 0, AUTOGRAD_TID: 0}
        self.stream_free = 0
        self.recording = False
        self.window_start = None
        self.events: list[dict] = []
        self.unrecorded_gpu: list[dict] = []  # GPU ops launched before the window; kept if they run into it
        self.next_external_id = 1
        self.next_correlation = 1000
        self.next_python_id = 1
        self.next_ev_idx = 0
        self.op_stack = {MAIN_TID: [], AUTOGRAD_TID: []}    # external ids of open CPU ops
        self.py_stack = {MAIN_TID: [], AUTOGRAD_TID: []}    # python ids of open frames
        self.gpu_ops_in_step: list[tuple[int, int]] = []
        self.allocated = 0
        self.reserved = 0
        self.launch_blocking = False  # CUDA_LAUNCH_BLOCKING=1: every launch returns when its GPU op is done
        self.lazy_loading = False     # the first launch of each kernel loads its module (CUDA lazy loading)
        self.loaded_kernels: set[str] = set()

    # -- time ---------------------------------------------------------------------------------------------
    def jitter(self, ns: float, spread: float = 0.06) -> int:
        return max(1, int(round(ns * (1.0 + self.rng.uniform(-spread, spread)))))

    def cpu(self, us: float, tid: int = MAIN_TID) -> None:
        """The host spends `us` µs of Python/C++ time on `tid`."""
        self.now[tid] += self.jitter(us * 1000)

    # -- emission -----------------------------------------------------------------------------------------
    def _ts(self, ns: int) -> float:
        return round(START_US + ns / 1000.0, 3)

    def _dur(self, ns: int) -> float:
        return round(ns / 1000.0, 3)

    def emit(self, event: dict) -> None:
        if self.recording:
            self.events.append(event)
        elif event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            self.unrecorded_gpu.append(event)

    def _ev_idx(self) -> int:
        self.next_ev_idx += 1
        return self.next_ev_idx - 1

    @contextlib.contextmanager
    def op(self, name: str, tid: int = MAIN_TID, cat: str = "cpu_op", overhead_us: float = 4.0,
           extra_args: dict | None = None):
        """A CPU op (or a record_function annotation) on `tid`; yields its External id."""
        start = self.now[tid]
        external_id = self.next_external_id
        self.next_external_id += 1
        ev_idx = self._ev_idx()
        self.op_stack[tid].append(external_id)
        self.cpu(overhead_us / 2, tid)
        try:
            yield external_id
        finally:
            self.cpu(overhead_us / 2, tid)
            self.op_stack[tid].pop()
            args = {"External id": external_id, "Record function id": 0}
            if extra_args:
                args.update(extra_args)
            args["Ev Idx"] = ev_idx
            self.emit({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": self._ts(start),
                       "dur": self._dur(self.now[tid] - start), "args": args})

    @contextlib.contextmanager
    def py(self, name: str, tid: int = MAIN_TID, overhead_us: float = 2.0, module_id: int | None = None):
        """A python_function frame, e.g. 'train.py(60): train_one_epoch' or 'nn.Module: Net_0'."""
        start = self.now[tid]
        python_id = self.next_python_id
        self.next_python_id += 1
        parent = self.py_stack[tid][-1] if self.py_stack[tid] else None
        ev_idx = self._ev_idx()
        self.py_stack[tid].append(python_id)
        self.cpu(overhead_us / 2, tid)
        try:
            yield python_id
        finally:
            self.cpu(overhead_us / 2, tid)
            self.py_stack[tid].pop()
            args = {"Python parent id": parent, "Python id": python_id}
            if module_id is not None:
                args["Python module id"] = module_id
            args["Ev Idx"] = ev_idx
            self.emit({"ph": "X", "cat": "python_function", "name": name, "pid": PID, "tid": tid,
                       "ts": self._ts(start), "dur": self._dur(self.now[tid] - start), "args": args})

    def _external(self, tid: int) -> int:
        return self.op_stack[tid][-1] if self.op_stack[tid] else 0

    def _runtime(self, name: str, cbid: int, start: int, end: int, tid: int, correlation: int | None) -> None:
        args = {"External id": self._external(tid), "cbid": cbid}
        if correlation is not None:
            args["correlation"] = correlation
        self.emit({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": self._ts(start),
                   "dur": self._dur(end - start), "args": args})

    def _flow(self, correlation: int, launch_ns: int, gpu_ns: int, tid: int) -> None:
        self.emit({"ph": "s", "id": correlation, "pid": PID, "tid": tid, "ts": self._ts(launch_ns), "cat": "ac2g",
                   "name": "ac2g"})
        self.emit({"ph": "f", "id": correlation, "pid": 0, "tid": STREAM, "ts": self._ts(gpu_ns), "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})

    def _queue_gpu(self, launch_end: int, dur: int) -> tuple[int, int]:
        start = max(launch_end + self.jitter(2500), self.stream_free)
        self.stream_free = start + dur
        self.gpu_ops_in_step.append((start, start + dur))
        return start, dur

    def _wait_if_blocking(self, tid: int) -> None:
        if self.launch_blocking:
            self.now[tid] = max(self.now[tid], self.stream_free + self.jitter(2500))

    def kernel(self, name: str, gpu_us: float, grid=(1, 1, 1), block=(128, 1, 1), tid: int = MAIN_TID,
               registers: int = 32, shared: int = 0, launch_us: float = 4.5) -> None:
        """cudaLaunchKernel on the host, the kernel on the stream when it is free."""
        correlation = self.next_correlation
        self.next_correlation += 1
        launch_start = self.now[tid]
        if self.lazy_loading and name not in self.loaded_kernels:
            self.loaded_kernels.add(name)
            self.cpu(420.0, tid)  # cuModuleLoadData / cuModuleGetFunction inside the first launch
        self.cpu(launch_us, tid)
        start, dur = self._queue_gpu(self.now[tid], self.jitter(gpu_us * 1000, 0.04))
        self._wait_if_blocking(tid)
        self._runtime("cudaLaunchKernel", 211, launch_start, self.now[tid], tid, correlation)
        blocks = grid[0] * grid[1] * grid[2]
        sms = DEVICES[self.device_key]["numSms"]
        threads = block[0] * block[1] * block[2]
        self.emit({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": STREAM, "ts": self._ts(start),
                   "dur": self._dur(dur), "args": {
                       "External id": self._external(tid), "queued": 0, "device": 0, "context": 1,
                       "stream": STREAM, "correlation": correlation, "registers per thread": registers,
                       "shared memory": shared, "blocks per SM": round(blocks / sms, 6),
                       "warps per SM": round(blocks * threads / 32 / sms, 6), "grid": list(grid),
                       "block": list(block), "est. achieved occupancy %": min(100, max(1, blocks * threads // (sms * 20)))}})
        self._flow(correlation, launch_start, start, tid)

    def memset(self, nbytes: int, tid: int = MAIN_TID) -> None:
        correlation = self.next_correlation
        self.next_correlation += 1
        launch_start = self.now[tid]
        self.cpu(4.0, tid)
        start, dur = self._queue_gpu(self.now[tid], self.jitter(1200 + nbytes / 1500.0))
        self._wait_if_blocking(tid)
        self._runtime("cudaMemsetAsync", 51, launch_start, self.now[tid], tid, correlation)
        self.emit({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": STREAM,
                   "ts": self._ts(start), "dur": self._dur(dur), "args": {
                       "External id": self._external(tid), "device": 0, "context": 1, "stream": STREAM,
                       "correlation": correlation, "bytes": nbytes,
                       "memory bandwidth (GB/s)": round(nbytes / dur, 6)}})
        self._flow(correlation, launch_start, start, tid)

    def memcpy(self, direction: str, host: str, nbytes: int, tid: int = MAIN_TID) -> None:
        """cudaMemcpyAsync. `host` is 'Pageable' or 'Pinned'. With pageable memory the call is synchronous in
        practice: a device-to-host copy returns only once the copy is done; a host-to-device copy larger than
        the driver's staging buffer returns once the DMA of its chunks is done, which needs the stream to reach
        the copy first (a hidden sync). Small host-to-device copies are staged and return at once."""
        correlation = self.next_correlation
        self.next_correlation += 1
        launch_start = self.now[tid]
        pageable = host == "Pageable"
        bandwidth = 5.6 if pageable else 21.5  # GB/s = bytes per ns
        dur = self.jitter(1300 + nbytes / bandwidth, 0.03)
        self.cpu(7.0, tid)
        start, dur = self._queue_gpu(self.now[tid], dur)
        if pageable and (direction == "DtoH" or nbytes > 65536):
            self.now[tid] = max(self.now[tid], start + dur) + self.jitter(3000)
        elif pageable:
            self.cpu(2.5 + nbytes / 4000.0, tid)
        else:
            self.cpu(2.5, tid)
        self._wait_if_blocking(tid)
        self._runtime("cudaMemcpyAsync", 41, launch_start, self.now[tid], tid, correlation)
        name = ("Memcpy HtoD (%s -> Device)" % host) if direction == "HtoD" else ("Memcpy DtoH (Device -> %s)" % host)
        self.emit({"ph": "X", "cat": "gpu_memcpy", "name": name, "pid": 0, "tid": STREAM, "ts": self._ts(start),
                   "dur": self._dur(dur), "args": {
                       "External id": self._external(tid), "device": 0, "context": 1, "stream": STREAM,
                       "correlation": correlation, "bytes": nbytes,
                       "memory bandwidth (GB/s)": round(nbytes / dur, 6)}})
        self._flow(correlation, launch_start, start, tid)

    def stream_synchronize(self, tid: int = MAIN_TID) -> None:
        """cudaStreamSynchronize: the host waits until the stream has drained."""
        correlation = self.next_correlation
        self.next_correlation += 1
        start = self.now[tid]
        self.cpu(2.0, tid)
        self.now[tid] = max(self.now[tid], self.stream_free + self.jitter(4000))
        self._runtime("cudaStreamSynchronize", 131, start, self.now[tid], tid, correlation)

    def cuda_malloc(self, tid: int = MAIN_TID) -> None:
        """cudaMalloc by the caching allocator when its pool has no free block of the size asked for."""
        start = self.now[tid]
        self.cpu(160.0, tid)
        self._runtime("cudaMalloc", 20, start, self.now[tid], tid, self._next_correlation())

    def cuda_free(self, tid: int = MAIN_TID) -> None:
        """cudaFree of a cached block (torch.cuda.empty_cache()); it synchronizes the device first."""
        start = self.now[tid]
        self.cpu(3.0, tid)
        self.now[tid] = max(self.now[tid], self.stream_free) + self.jitter(95_000)
        self._runtime("cudaFree", 22, start, self.now[tid], tid, self._next_correlation())

    def _next_correlation(self) -> int:
        self.next_correlation += 1
        return self.next_correlation - 1

    def memory(self, delta: int, tid: int = MAIN_TID) -> None:
        """A [memory] instant event of the CUDA caching allocator (profile_memory=True)."""
        self.allocated += delta
        self.reserved = max(self.reserved, (self.allocated + (1 << 21) - 1) // (1 << 21) * (1 << 21))
        self.emit({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": tid,
                   "ts": self._ts(self.now[tid]), "args": {
                       "Total Reserved": self.reserved, "Total Allocated": self.allocated, "Bytes": delta,
                       "Addr": 139872003915776 + (self.next_ev_idx * 4096) % (1 << 30), "Device Id": 0,
                       "Device Type": 1, "Ev Idx": self._ev_idx()}})
