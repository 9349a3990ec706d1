"""The forward part of the modelled training step: the network's convolutions, batch norms, activations,
pooling and classifier, then the loss with each of its variants (the label check, the class weights, the
pick of the target's log-probabilities)."""

from __future__ import annotations

import contextlib

from scenario_loop_base import TrainingLoopBase
from scenario_program import CONVS, LOSS_FRAMES
from scenario_tables import (ARANGE_KERNEL, ASSERT_ASYNC_KERNEL, BN_FWD_KERNEL, ELEMENTWISE, INDEX_KERNEL,
                             LOG_SOFTMAX_KERNEL, LT_KERNEL, MAX_KERNEL, MAXPOOL_KERNEL, MEAN_KERNEL, NEG_MEAN_KERNEL,
                             NLL_KERNEL, RELU_KERNEL)


class ForwardPass(TrainingLoopBase):
    def forward(self) -> None:
        sim = self.sim
        dtype = self.prec["dtype"]
        with self.module("Net", 0, "train.py(41): forward"):
            for index, (cin, cout, k, hw_in, hw, fprop_us, pool) in enumerate(CONVS):
                fprop_us = self.scaled(fprop_us)
                with self.module("Conv2d", index, "torch/nn/modules/conv.py(553): forward"):
                    with sim.py("torch/nn/modules/conv.py(536): _conv_forward", overhead_us=2.0):
                        with sim.py("<built-in method conv2d of type object at 0x7f4a1c2e9f20>", overhead_us=1.0):
                            shapes = self.shapes(
                                [[self.batch, cin, hw_in, hw_in], [cout, cin, k, k], [cout] if self.p.conv_bias else [],
                                 [], [], [], []],
                                [dtype, dtype, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"])
                            with sim.op("aten::conv2d", extra_args=shapes):
                                if index == 0:
                                    self.autocast_cast(self.batch * cin * hw_in * hw_in)
                                self.autocast_cast(cout * cin * k * k)
                                with sim.op("aten::convolution", extra_args=shapes):
                                    with sim.op("aten::_convolution", extra_args=shapes):
                                        with sim.op("aten::cudnn_convolution", overhead_us=18.0):
                                            self.allocate(self.batch * cout * hw * hw * 2)
                                            sim.kernel(self.prec["fprop"], self.math_us(fprop_us),
                                                       grid=(hw * hw * self.batch // 128, 1, 1), block=(256, 1, 1),
                                                       registers=168, shared=49152)
                                        if self.p.conv_bias:
                                            with sim.op("aten::add_"):
                                                sim.kernel(self.k(ELEMENTWISE.format(
                                                    functor="at::native::CUDAFunctor_add<c10::BFloat16>", arity=3)),
                                                    fprop_us * 0.1, grid=(hw * hw * self.batch // 16, 1, 1))
                with self.module("BatchNorm2d", index, "torch/nn/modules/batchnorm.py(159): forward"):
                    with sim.py("torch/nn/functional.py(2800): batch_norm", overhead_us=3.0):
                        with sim.op("aten::batch_norm"):
                            with sim.op("aten::_batch_norm_impl_index"):
                                with sim.op("aten::cudnn_batch_norm", overhead_us=10.0):
                                    sim.kernel(self.k(BN_FWD_KERNEL), self.math_us(fprop_us) * 0.22, grid=(cout, 1, 1),
                                               block=(512, 1, 1), registers=40)
                with self.module("ReLU", index, "torch/nn/modules/activation.py(132): forward"):
                    with sim.py("torch/nn/functional.py(1693): relu", overhead_us=2.0):
                        with sim.op("aten::relu_"):
                            with sim.op("aten::clamp_min_"):
                                sim.kernel(self.k(RELU_KERNEL), fprop_us * 0.11, grid=(hw * hw * self.batch // 16, 1, 1))
                if pool:
                    with self.module("MaxPool2d", 0, "torch/nn/modules/pooling.py(212): forward"):
                        with sim.op("aten::max_pool2d"):
                            with sim.op("aten::max_pool2d_with_indices"):
                                sim.kernel(self.k(MAXPOOL_KERNEL), self.scaled(38.0), grid=(self.per_batch(2048), 1, 1),
                                           block=(256, 1, 1))
            with self.module("AdaptiveAvgPool2d", 0, "torch/nn/modules/pooling.py(1383): forward"):
                with sim.op("aten::adaptive_avg_pool2d"):
                    if self.p.head == "mlp":  # AdaptiveAvgPool2d((4, 4))
                        with sim.op("aten::_adaptive_avg_pool2d"):
                            sim.kernel(self.k(MEAN_KERNEL), self.scaled(14.0), grid=(self.per_batch(2048), 1, 1))
                    else:
                        with sim.op("aten::mean"):
                            sim.kernel(self.k(MEAN_KERNEL), self.scaled(11.0), grid=(self.per_batch(512), 1, 1))
            with sim.op("aten::flatten"):
                with sim.op("aten::view", overhead_us=2.0):
                    pass
            for index, (fan_in, fan_out) in enumerate(self.linears):
                if index:
                    with self.module("ReLU", len(CONVS), "torch/nn/modules/activation.py(132): forward"):
                        with sim.op("aten::relu"):
                            with sim.op("aten::clamp_min"):
                                sim.kernel(self.k(RELU_KERNEL), self.scaled(4.0), grid=(self.batch * fan_in // 2048, 1, 1))
                self.linear_forward(index, fan_in, fan_out)
            self.allocate(self.batch * self.classes * 2)
        self.allocator_pool_empty = False

    def linear_forward(self, index: int, fan_in: int, fan_out: int) -> None:
        sim = self.sim
        dtype = self.prec["dtype"]
        with self.module("Linear", index, "torch/nn/modules/linear.py(124): forward"):
            with sim.py("<built-in function linear>", overhead_us=1.0):
                shapes = self.shapes([[self.batch, fan_in], [fan_out, fan_in], [fan_out]], [dtype, dtype, dtype])
                with sim.op("aten::linear", extra_args=shapes):
                    self.autocast_cast(fan_out * fan_in)
                    self.autocast_cast(fan_out)
                    with sim.op("aten::t"):
                        with sim.op("aten::transpose", overhead_us=2.0):
                            pass
                    with sim.op("aten::addmm", extra_args=self.shapes(
                            [[fan_out], [self.batch, fan_in], [fan_in, fan_out], [], []],
                            [dtype, dtype, dtype, "Scalar", "Scalar"])):
                        sim.kernel(self.prec["gemm_tn"], self.gemm_us(self.batch, fan_in, fan_out),
                                   grid=(max(1, fan_out // 64), 1, 2), block=(128, 1, 1), registers=230, shared=36864)

    def loss_forward(self, number: int) -> None:
        sim = self.sim
        frame = LOSS_FRAMES[self.p.loss]
        with self.module("WeightedNLLLoss", 0, frame):
            if self.p.label_check == "assert_item":
                # assert target.max() < self.n_classes  -> Tensor.__bool__ copies one byte back and waits
                with sim.op("aten::max"):
                    sim.kernel(MAX_KERNEL, 5.5, grid=(1, 1, 1), block=(32, 16, 1))
                with sim.py("torch/_tensor.py(38): wrapped", overhead_us=2.0):
                    with sim.op("aten::lt"):
                        sim.kernel(LT_KERNEL, 1.9)
                with sim.op("aten::is_nonzero"):
                    with sim.op("aten::item"):
                        with sim.op("aten::_local_scalar_dense"):
                            sim.memcpy("DtoH", "Pageable", 1)
                            sim.stream_synchronize()
            elif self.p.label_check == "assert_async":
                # torch._assert_async(target.max() < self.n_classes): checked on the GPU, no host wait
                with sim.op("aten::max"):
                    sim.kernel(MAX_KERNEL, 5.5, grid=(1, 1, 1), block=(32, 16, 1))
                with sim.py("torch/_tensor.py(38): wrapped", overhead_us=2.0):
                    with sim.op("aten::lt"):
                        sim.kernel(LT_KERNEL, 1.9)
                with sim.py("<built-in method _assert_async of type object at 0x7f4a1c2e9f20>", overhead_us=1.0):
                    with sim.op("aten::_assert_async"):
                        sim.kernel(ASSERT_ASYNC_KERNEL, 1.6, block=(1, 1, 1))

            if self.p.loss == "tensor_every_step":
                # weight = torch.Tensor([0.1] * self.n_classes).cuda()
                with sim.op("aten::lift_fresh", overhead_us=2.0):
                    sim.cpu(55.0)  # building the tensor from a 1000-element Python list
                self.blocking_h2d(self.classes * 4, "float")
            elif self.p.loss == "module_every_step":
                # criterion = nn.NLLLoss(weight=torch.tensor(self.class_weights).cuda())
                with sim.op("aten::lift_fresh", overhead_us=2.0):
                    sim.cpu(55.0)
                self.blocking_h2d(self.classes * 4, "float")
                with sim.py("torch/nn/modules/loss.py(209): __init__", overhead_us=4.0):
                    with sim.py("torch/nn/modules/loss.py(38): __init__", overhead_us=3.0):
                        with sim.py("torch/nn/modules/loss.py(28): __init__", overhead_us=3.0):
                            with sim.py("torch/nn/modules/module.py(474): __init__", overhead_us=3.0):
                                with sim.py("<built-in method _log_api_usage_once of PyCapsule object at 0x7f4a1d0c6a30>",
                                            overhead_us=1.0):
                                    pass
                                sim.cpu(38.0)
                            with sim.py("torch/nn/_reduction.py(7): legacy_get_string", overhead_us=1.0):
                                pass
                        with sim.py("torch/nn/modules/module.py(540): register_buffer", overhead_us=4.0):
                            pass
            with sim.py("torch/nn/functional.py(2233): log_softmax", overhead_us=3.0):
                with sim.op("aten::log_softmax"):
                    with sim.op("aten::_log_softmax"):
                        sim.kernel(LOG_SOFTMAX_KERNEL, self.scaled(6.8), grid=(self.batch, 1, 1), block=(1024, 1, 1))
            if self.p.pick in ("python_range", "arange"):
                # loss = -(self.weight[target] * logp[range(n), target]).mean()  vs  torch.arange(n, device=...)
                if self.p.pick == "python_range":
                    with sim.op("aten::lift_fresh", overhead_us=2.0):
                        sim.cpu(14.0)
                    with sim.op("aten::index"):
                        with sim.op("aten::to"):
                            with sim.op("aten::_to_copy"):
                                with sim.op("aten::empty_strided", overhead_us=3.0):
                                    pass
                                with sim.op("aten::copy_"):
                                    sim.memcpy("HtoD", "Pageable", self.batch * 8)
                                    sim.stream_synchronize()
                        sim.kernel(INDEX_KERNEL, 3.1, grid=(1, 1, 1), block=(128, 1, 1))
                else:
                    with sim.py("<built-in method arange of type object at 0x7f4a1c2e9f20>", overhead_us=1.0):
                        with sim.op("aten::arange"):
                            with sim.op("aten::empty", overhead_us=3.0):
                                pass
                            with sim.op("aten::arange"):
                                sim.kernel(ARANGE_KERNEL, 1.5)
                    with sim.op("aten::index"):
                        sim.kernel(INDEX_KERNEL, 3.1, grid=(1, 1, 1), block=(128, 1, 1))
                with sim.op("aten::index"):
                    sim.kernel(INDEX_KERNEL, 2.4, grid=(1, 1, 1), block=(128, 1, 1))
                with sim.op("aten::mul"):
                    sim.kernel(ELEMENTWISE.format(functor="at::native::binary_internal::MulFunctor<float>", arity=3), 1.6)
                with sim.op("aten::mean"):
                    sim.kernel(NEG_MEAN_KERNEL, 3.4)
                with sim.op("aten::neg"):
                    sim.kernel(ELEMENTWISE.format(functor="at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#6}::operator()() const::{lambda(float)#1}", arity=2), 1.4)
            else:
                if self.p.loss == "module_every_step":
                    self.loss_module_instances += 1
                    nll = self.module("NLLLoss", self.loss_module_instances, "torch/nn/modules/loss.py(232): forward")
                elif self.p.loss == "module_once":
                    nll = self.module("NLLLoss", 0, "torch/nn/modules/loss.py(232): forward")
                else:
                    nll = contextlib.nullcontext()
                with nll:
                    with sim.py("torch/nn/functional.py(2741): nll_loss", overhead_us=3.0):
                        with sim.op("aten::nll_loss_nd"):
                            with sim.op("aten::nll_loss"):
                                with sim.op("aten::nll_loss_forward"):
                                    sim.kernel(NLL_KERNEL, 4.2, grid=(1, 1, 1), block=(32, 1, 1))
