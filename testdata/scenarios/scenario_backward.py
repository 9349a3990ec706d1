"""The backward part of the modelled training step: loss.backward() on the main thread and the backward
graph the autograd engine's device thread evaluates, node by node, with the gradient accumulation and the
checks of anomaly detection."""

from __future__ import annotations

import contextlib

from scenario_loop_base import TrainingLoopBase
from scenario_program import CONVS
from scenario_sim import AUTOGRAD_TID, MAIN_TID
from scenario_tables import (BN_BWD_KERNEL, ELEMENTWISE, FILL_KERNEL, LOG_SOFTMAX_BWD_KERNEL, MAX_KERNEL,
                             MAXPOOL_BWD_KERNEL, MEAN_BWD_KERNEL, MEAN_KERNEL, NLL_BWD_KERNEL, RELU_BWD_KERNEL)


class BackwardPass(TrainingLoopBase):
    def backward(self) -> None:
        """loss.backward(): the main thread waits in run_backward while the autograd device thread works."""
        sim = self.sim
        with sim.py("torch/_tensor.py(581): backward", overhead_us=3.0):
            with sim.py("torch/autograd/__init__.py(347): backward", overhead_us=6.0):
                with sim.py("torch/autograd/graph.py(823): _engine_run_backward", overhead_us=2.0):
                    with sim.py("<built-in method run_backward of torch._C._EngineBase object at 0x7f4a0b3d5e40>",
                                overhead_us=2.0):
                        sim.now[AUTOGRAD_TID] = max(sim.now[AUTOGRAD_TID], sim.now[MAIN_TID]) + sim.jitter(9000)
                        self.backward_graph()
                        sim.now[MAIN_TID] = max(sim.now[MAIN_TID], sim.now[AUTOGRAD_TID]) + sim.jitter(6000)

    @contextlib.contextmanager
    def evaluate(self, backward_name: str, sequence: int):
        """One node of the backward graph on the autograd thread. With anomaly detection on, the engine checks
        every gradient the node returns for NaN: isnan, any, then .item() (a device-to-host copy and a wait)."""
        sim = self.sim
        t = AUTOGRAD_TID
        with sim.op("autograd::engine::evaluate_function: %s" % backward_name, t, overhead_us=9.0,
                    extra_args={"Sequence number": sequence, "Fwd thread id": 1}):
            yield
            if self.p.detect_anomaly and "AccumulateGrad" not in backward_name:
                with sim.op("aten::isnan", t):
                    with sim.op("aten::ne", t):
                        sim.kernel(self.k(ELEMENTWISE.format(functor="at::native::(anonymous namespace)::CompareEqFunctor<c10::BFloat16>", arity=3)), 4.0, tid=t)
                with sim.op("aten::any", t):
                    sim.kernel(MAX_KERNEL.replace("max_values_kernel_cuda_impl<long, long>", "or_kernel_cuda<bool>"), 4.5, tid=t)
                with sim.op("aten::item", t):
                    with sim.op("aten::_local_scalar_dense", t):
                        sim.memcpy("DtoH", "Pageable", 1, tid=t)
                        sim.stream_synchronize(tid=t)

    def accumulate_grad(self, numel: int) -> None:
        """AccumulateGrad: with set_to_none the gradient is stolen (detach), else added into .grad."""
        sim = self.sim
        t = AUTOGRAD_TID
        with self.evaluate("torch::autograd::AccumulateGrad", 0):
            with sim.op("torch::autograd::AccumulateGrad", t):
                if not self.p.set_to_none:
                    with sim.op("aten::add_", t):
                        sim.kernel(ELEMENTWISE.format(functor="at::native::CUDAFunctor_add<float>", arity=3),
                                   1.8 + numel / 6.0e5, tid=t)
                else:
                    with sim.op("aten::detach", t, overhead_us=2.0):
                        pass

    def linear_backward(self, seq: int, fan_in: int, fan_out: int) -> None:
        sim = self.sim
        t = AUTOGRAD_TID
        dtype = self.prec["dtype"]
        with self.evaluate("AddmmBackward0", seq):
            with sim.op("AddmmBackward0", t):
                with sim.op("aten::mm", t, extra_args=self.shapes([[self.batch, fan_out], [fan_out, fan_in]], [dtype] * 2)):
                    sim.kernel(self.prec["gemm_nn"], self.gemm_us(self.batch, fan_in, fan_out), tid=t,
                               grid=(max(1, fan_in // 64), 1, 1), registers=230)
                with sim.op("aten::mm", t, extra_args=self.shapes([[fan_out, self.batch], [self.batch, fan_in]], [dtype] * 2)):
                    sim.kernel(self.prec["gemm_nt"], self.gemm_us(self.batch, fan_in, fan_out), tid=t,
                               grid=(max(1, fan_out // 64), 1, 1), registers=230)
                with sim.op("aten::sum", t):
                    sim.kernel(self.k(MEAN_KERNEL), 4.0, tid=t)
        if self.prec["autocast"]:
            for numel in (fan_out * fan_in, fan_out):
                with self.evaluate("ToCopyBackward0", seq - 1):
                    with sim.op("ToCopyBackward0", t):
                        with sim.op("aten::to", t):
                            with sim.op("aten::_to_copy", t):
                                with sim.op("aten::copy_", t):
                                    sim.kernel(self.prec["cast"], 2.0 + numel / 9.0e5, tid=t)
        for numel in (fan_out * fan_in, fan_out):
            self.accumulate_grad(numel)

    def backward_graph(self) -> None:
        sim = self.sim
        t = AUTOGRAD_TID
        seq = 900
        with self.evaluate("NllLossBackward0", seq):
            with sim.op("NllLossBackward0", t, extra_args={"Sequence number": seq, "Fwd thread id": 1}):
                with sim.op("aten::nll_loss_backward", t):
                    with sim.op("aten::zeros", t):
                        with sim.op("aten::zero_", t):
                            with sim.op("aten::fill_", t):
                                sim.kernel(FILL_KERNEL, 2.1, tid=t)
                    sim.kernel(NLL_BWD_KERNEL, 3.0, tid=t)
        with self.evaluate("LogSoftmaxBackward0", seq - 1):
            with sim.op("LogSoftmaxBackward0", t):
                with sim.op("aten::_log_softmax_backward_data", t):
                    sim.kernel(LOG_SOFTMAX_BWD_KERNEL, self.scaled(7.4), tid=t, block=(1024, 1, 1))
        for index in reversed(range(len(self.linears))):
            fan_in, fan_out = self.linears[index]
            self.linear_backward(seq - 2 - 4 * index, fan_in, fan_out)
            if index:
                with self.evaluate("ReluBackward0", seq - 3 - 4 * index):
                    with sim.op("ReluBackward0", t):
                        with sim.op("aten::threshold_backward", t):
                            sim.kernel(self.k(RELU_BWD_KERNEL), self.scaled(5.0), tid=t, grid=(self.batch * fan_in // 2048, 1, 1))
        with self.evaluate("ViewBackward0", seq - 4):
            with sim.op("ViewBackward0", t):
                with sim.op("aten::reshape", t):
                    with sim.op("aten::view", t, overhead_us=2.0):
                        pass
        with self.evaluate("MeanBackward1", seq - 5):
            with sim.op("MeanBackward1", t):
                with sim.op("aten::expand", t, overhead_us=2.0):
                    pass
                with sim.op("aten::div", t):
                    sim.kernel(self.k(MEAN_BWD_KERNEL), self.scaled(9.0), tid=t)
        for index in reversed(range(len(CONVS))):
            cin, cout, k, _, hw, fprop_us, pool = CONVS[index]
            fprop_us = self.scaled(fprop_us)
            if pool:
                with self.evaluate("MaxPool2DWithIndicesBackward0", seq - 6):
                    with sim.op("MaxPool2DWithIndicesBackward0", t):
                        with sim.op("aten::max_pool2d_with_indices_backward", t):
                            with sim.op("aten::zero_", t):
                                with sim.op("aten::fill_", t):
                                    sim.kernel(FILL_KERNEL, self.scaled(14.0), tid=t)
                            sim.kernel(self.k(MAXPOOL_BWD_KERNEL), self.scaled(62.0), tid=t,
                                       grid=(self.per_batch(2048), 1, 1))
            with self.evaluate("ReluBackward0", seq - 7 - index):
                with sim.op("ReluBackward0", t):
                    with sim.op("aten::threshold_backward", t):
                        sim.kernel(self.k(RELU_BWD_KERNEL), fprop_us * 0.16, tid=t, grid=(hw * hw * self.batch // 16, 1, 1))
            with self.evaluate("CudnnBatchNormBackward0", seq - 8 - index):
                with sim.op("CudnnBatchNormBackward0", t):
                    with sim.op("aten::cudnn_batch_norm_backward", t, overhead_us=12.0):
                        sim.kernel(self.k(BN_BWD_KERNEL), self.math_us(fprop_us) * 0.35, tid=t, grid=(cout, 1, 1),
                                   block=(512, 1, 1))
            for _ in range(2):  # batch-norm weight and bias
                self.accumulate_grad(cout)
            with self.evaluate("ConvolutionBackward0", seq - 9 - index):
                with sim.op("ConvolutionBackward0", t):
                    with sim.op("aten::convolution_backward", t, overhead_us=20.0):
                        if index > 0:
                            sim.kernel(self.prec["dgrad"], self.math_us(fprop_us) * 1.05, tid=t,
                                       grid=(hw * hw * self.batch // 64, 1, 1), block=(256, 1, 1), registers=168,
                                       shared=49152)
                        sim.kernel(self.prec["wgrad"], self.math_us(fprop_us) * 1.15, tid=t,
                                   grid=(cout // 4, 1, 1), block=(256, 1, 1), registers=168, shared=49152)
                        if self.p.conv_bias:  # grad of the bias: a reduction over N, H, W
                            sim.kernel(self.k(MEAN_KERNEL).replace("MeanOps", "func_wrapper_t"), fprop_us * 0.12,
                                       tid=t, grid=(cout, 1, 1))
            if self.prec["autocast"]:
                with self.evaluate("ToCopyBackward0", seq - 10 - index):
                    with sim.op("ToCopyBackward0", t):
                        with sim.op("aten::to", t):
                            with sim.op("aten::_to_copy", t):
                                with sim.op("aten::copy_", t):
                                    sim.kernel(self.prec["cast"], 2.0 + cout * cin * k * k / 9.0e5, tid=t)
            self.accumulate_grad(cout * cin * k * k)
            if self.p.conv_bias:
                self.accumulate_grad(cout)
            sim.memory(-self.batch * cout * hw * hw * 2, tid=t)
        sim.memory(-self.batch * self.classes * 2, tid=t)
