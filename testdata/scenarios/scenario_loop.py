"""`TrainingLoop`: one step of `train.py` as the profiler records it, from the parts in scenario_data_loading,
scenario_forward, scenario_backward and scenario_optimizer, plus the optional end-of-step calls (loss.item(),
torch.cuda.empty_cache())."""

from __future__ import annotations

from scenario_backward import BackwardPass
from scenario_data_loading import DataLoading
from scenario_forward import ForwardPass
from scenario_optimizer import OptimizerStep
from scenario_program import CONVS
from scenario_sim import STREAM


class TrainingLoop(DataLoading, ForwardPass, BackwardPass, OptimizerStep):
    """The training loop of the scenarios; each switch of its `Program` changes one line of `train.py`."""

    # -- one step -----------------------------------------------------------------------------------------
    def step(self, number: int) -> None:
        sim = self.sim
        sim.gpu_ops_in_step = []
        with sim.op("ProfilerStep#%d" % number, cat="user_annotation", overhead_us=6.0) as step_external_id:
            self.next_batch()
            if self.p.preprocess == "main_thread":
                self.preprocess_batch()
            with sim.py("torch/utils/_contextlib.py(113): decorate_context", overhead_us=1.0):
                pass
            self.copy_batch()
            with sim.py("torch/amp/autocast_mode.py(320): __enter__", overhead_us=6.0):
                pass
            self.forward()
            self.loss_forward(number)
            with sim.py("torch/amp/autocast_mode.py(378): __exit__", overhead_us=4.0):
                pass
            self.zero_grad()
            self.backward()
            self.optimizer_step()
            if self.p.empty_cache:
                self.empty_cache()
            if self.p.log_loss:
                self.log_loss()
            with sim.py("torch/profiler/profiler.py(773): step", overhead_us=9.0):
                pass
        if self.sim.gpu_ops_in_step and sim.recording:
            first = min(s for s, _ in sim.gpu_ops_in_step)
            last = max(e for _, e in sim.gpu_ops_in_step)
            sim.emit({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#%d" % number, "pid": 0,
                      "tid": STREAM, "ts": sim._ts(first), "dur": sim._dur(last - first),
                      "args": {"External id": step_external_id}})

    def log_loss(self) -> None:
        """running_loss += loss.item(): one float copied back, the host waits for the stream."""
        sim = self.sim
        with sim.op("aten::item"):
            with sim.op("aten::_local_scalar_dense"):
                sim.memcpy("DtoH", "Pageable", 4)
                sim.stream_synchronize()

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): every cached block goes back to the driver (cudaFree each)."""
        sim = self.sim
        with sim.py("torch/cuda/memory.py(192): empty_cache", overhead_us=3.0):
            with sim.py("<built-in function _cuda_emptyCache>", overhead_us=2.0):
                for _ in range(len(CONVS) + 2):
                    sim.cuda_free()
        self.allocator_pool_empty = True
