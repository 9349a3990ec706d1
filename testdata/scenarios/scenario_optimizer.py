"""The optimizer part of the modelled training step: optimizer.zero_grad() and SGD's step, with the foreach
(multi_tensor_apply) and the single-tensor implementations."""

from __future__ import annotations

from scenario_loop_base import TrainingLoopBase
from scenario_tables import ELEMENTWISE, FILL_KERNEL, FOREACH_ADD_LIST, FOREACH_ADD_SCALAR, FOREACH_MUL


class OptimizerStep(TrainingLoopBase):
    def zero_grad(self) -> None:
        sim = self.sim
        with sim.py("torch/_compile.py(27): inner", overhead_us=2.0):
            with sim.py("torch/optim/optimizer.py(932): zero_grad", overhead_us=6.0):
                with sim.op("Optimizer.zero_grad#SGD.zero_grad", cat="user_annotation", overhead_us=5.0):
                    for index in range(self.param_count):
                        if self.p.set_to_none:
                            sim.cpu(1.2)  # p.grad = None
                        else:
                            with sim.op("aten::zero_"):
                                with sim.op("aten::fill_"):
                                    numel = self.params[index]
                                    sim.kernel(FILL_KERNEL, 1.6 + numel / 4.0e5, grid=(max(1, numel // 512), 1, 1))

    def optimizer_step(self) -> None:
        """SGD(momentum=0.9). foreach (the default on CUDA): three multi_tensor_apply kernels for all
        parameters; single_tensor (foreach=False): three elementwise kernels per parameter tensor."""
        sim = self.sim
        with sim.py("torch/optim/optimizer.py(465): wrapper", overhead_us=8.0):
            with sim.op("Optimizer.step#SGD.step", cat="user_annotation", overhead_us=6.0):
                with sim.py("torch/utils/_contextlib.py(113): decorate_context", overhead_us=2.0):
                    with sim.py("torch/optim/sgd.py(80): step", overhead_us=12.0):
                        with sim.py("torch/optim/sgd.py(244): sgd", overhead_us=4.0):
                            if self.p.optimizer == "single_tensor":
                                self.single_tensor_sgd()
                            else:
                                self.multi_tensor_sgd()

    def multi_tensor_sgd(self) -> None:
        sim = self.sim
        with sim.py("torch/optim/sgd.py(374): _multi_tensor_sgd", overhead_us=10.0):
            total = sum(self.params)
            grid = (max(1, total // 65536), 1, 1)
            with sim.op("aten::_foreach_mul_"):
                sim.kernel(FOREACH_MUL, 3.0 + total / 5.0e5, grid=grid, block=(512, 1, 1))
            with sim.op("aten::_foreach_add_"):
                sim.kernel(FOREACH_ADD_LIST, 3.0 + total / 3.5e5, grid=grid, block=(512, 1, 1))
            with sim.op("aten::_foreach_add_"):
                sim.kernel(FOREACH_ADD_SCALAR, 3.0 + total / 3.5e5, grid=grid, block=(512, 1, 1))

    def single_tensor_sgd(self) -> None:
        sim = self.sim
        mul = ELEMENTWISE.format(functor="at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >", arity=2)
        add = ELEMENTWISE.format(functor="at::native::CUDAFunctor_add<float>", arity=3)
        with sim.py("torch/optim/sgd.py(311): _single_tensor_sgd", overhead_us=10.0):
            for numel in self.params:
                grid = (max(1, numel // 2048), 1, 1)
                sim.cpu(6.0)  # the Python loop body
                with sim.op("aten::mul_"):
                    sim.kernel(mul, 1.6 + numel / 6.0e5, grid=grid)
                with sim.op("aten::add_"):
                    sim.kernel(add, 1.8 + numel / 4.5e5, grid=grid)
                with sim.op("aten::add_"):
                    sim.kernel(add, 1.8 + numel / 4.5e5, grid=grid)
