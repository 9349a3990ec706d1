"""State and helpers shared by the parts of the modelled training step: the program's parameters and
classifier, kernel times at this run's batch and precision, kernel names in its element type, allocator
blocks, nn.Module frames and the casts and copies several parts make. The parts are in scenario_data_loading,
scenario_forward, scenario_backward and scenario_optimizer; scenario_loop joins them into `TrainingLoop`."""

from __future__ import annotations

import contextlib

from scenario_program import CONVS, Program
from scenario_sim import MAIN_TID, Sim
from scenario_tables import PRECISIONS


class TrainingLoopBase:
    """One training process running `train.py` with the switches of a `Program`, on its own `Sim`."""

    def __init__(self, program: Program, seed: int = 7):
        self.p = program
        self.sim = Sim(program.device, seed)
        self.prec = PRECISIONS[program.precision]
        self.loss_module_instances = 0
        self.batch = program.batch
        self.classes = program.classes
        # The classifier: (in_features, out_features) of each nn.Linear.
        if program.head == "mlp":
            self.linears = [(8192, 4096), (4096, self.classes)]
        else:
            self.linears = [(512, self.classes)]
        # Parameter tensors in registration order: conv weight (and bias), batch-norm weight and bias, then the
        # linears' weight and bias.
        self.params: list[int] = []
        for cin, cout, k, *_ in CONVS:
            self.params += [cout * cin * k * k] + ([cout] if program.conv_bias else []) + [cout, cout]
        for fan_in, fan_out in self.linears:
            self.params += [fan_out * fan_in, fan_out]
        self.param_count = len(self.params)
        self.allocator_pool_empty = True  # the caching allocator has no free blocks (start, or after empty_cache)

    # -- helpers ------------------------------------------------------------------------------------------
    def scaled(self, us: float) -> float:
        """Kernel time measured at batch 64, at this run's batch size (small batches do not fill the GPU). Every
        kernel whose work grows with the batch (convolutions, their elementwise and pooling kernels, the head's
        activations and log-softmax) goes through it; the loss's few-element kernels do not."""
        return max(us * self.batch / 64.0, us * 0.12)

    def per_batch(self, blocks: int) -> int:
        """A grid sized at batch 64, at this run's batch size: one block per slice of the batch's elements."""
        return max(1, blocks * self.batch // 64)

    def math_us(self, us: float) -> float:
        return us * self.prec["conv_scale"]

    def gemm_us(self, batch: int, fan_in: int, fan_out: int) -> float:
        """GEMM time: 100 TFLOP/s effective for bf16 Tensor Core kernels, scaled by precision, 7 µs floor."""
        return (7.0 + 2.0 * batch * fan_in * fan_out / 100.0e6) * self.prec["gemm_scale"]

    def k(self, name: str) -> str:
        """A kernel name template written for bf16, in this run's element type."""
        token = self.prec["token"]
        if token == "__nv_bfloat16":
            return name
        scalar = {"__half": "c10::Half", "float": "float"}[token]
        return name.replace("__nv_bfloat16", token).replace("c10::BFloat16", scalar)

    def allocate(self, nbytes: int, tid: int = MAIN_TID) -> None:
        """A block from the caching allocator; cudaMalloc only when its pool is empty."""
        if self.allocator_pool_empty:
            self.sim.cuda_malloc(tid)
        self.sim.memory(nbytes, tid)

    def shapes(self, dims, types):
        return {"Input Dims": dims, "Input type": types}

    def module(self, class_name: str, index: int, forward_frame: str):
        """Enter an nn.Module call the way the Python tracer records it."""
        sim = self.sim
        stack = contextlib.ExitStack()
        stack.enter_context(sim.py("torch/nn/modules/module.py(1736): _wrapped_call_impl", overhead_us=1.5))
        stack.enter_context(sim.py("nn.Module: %s_%d" % (class_name, index), overhead_us=1.0, module_id=index))
        stack.enter_context(sim.py("torch/nn/modules/module.py(1747): _call_impl", overhead_us=3.0))
        stack.enter_context(sim.py(forward_frame, overhead_us=1.5))
        return stack

    def autocast_cast(self, numel: int, tid: int = MAIN_TID) -> None:
        """autocast re-casts each fp32 weight to the low precision type on every forward."""
        if not self.prec["autocast"]:
            return
        sim = self.sim
        with sim.op("aten::to", tid, extra_args=self.shapes([[numel]], ["float"])):
            with sim.op("aten::_to_copy", tid):
                with sim.op("aten::empty_strided", tid, overhead_us=3.0):
                    pass
                with sim.op("aten::copy_", tid):
                    sim.kernel(self.prec["cast"], 2.0 + numel / 9.0e5, grid=(max(1, numel // 2048), 1, 1),
                               block=(128, 1, 1), tid=tid)

    def blocking_h2d(self, nbytes: int, dtype: str) -> None:
        """`tensor.to(device)` / `.cuda()` of a CPU tensor (non_blocking=False): copy then stream sync."""
        sim = self.sim
        with sim.op("aten::to", extra_args=self.shapes([[nbytes // 4]], [dtype])):
            with sim.op("aten::_to_copy"):
                with sim.op("aten::empty_strided", overhead_us=3.0):
                    pass
                with sim.op("aten::copy_"):
                    sim.memcpy("HtoD", "Pageable", nbytes)
                    sim.stream_synchronize()
