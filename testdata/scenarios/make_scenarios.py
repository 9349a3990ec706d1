#!/usr/bin/env python3
"""Writes the scenario traces: a small CNN training loop, recorded as torch.profiler (Kineto, 2023+ format)
would record it, once with each classic training-loop mistake and once with its fix.

Run by hand from anywhere (Python 3 standard library only, deterministic):

    python3 testdata/scenarios/make_scenarios.py

It rewrites every *.json.gz beside this file, and the fire/quiet fixtures of rules PTA107-PTA121 in
rules.d/<group>/<name>.tests/. README.md beside it tells what each trace is and what ptadvise must find in it.

How the traces are made: `Sim` is a small model of one process running the loop. The host thread advances its
own clock through Python frames, CPU ops and CUDA runtime calls; each launch queues a GPU op on stream 7 that
starts when both the launch has happened and the stream is free, so the GPU drains its queue asynchronously
and the host runs ahead unless something blocks it (a stream synchronize, a pageable copy, a slow data
loader). Backward runs on the autograd engine's device thread, as it does for CUDA tensors. `TrainingLoop`
emits one step of `train.py` from a set of switches (`Program`), so each scenario is the same program with one
line changed. The profiler schedule is wait=1, warmup=1, active=8: steps 0-1 run unrecorded (the GPU queue is
warm when recording starts) and ProfilerStep#2..#9 are recorded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

PID = 48213          # the training process
MAIN_TID = 48213     # its main thread
AUTOGRAD_TID = 48391  # the autograd engine's CUDA device thread
STREAM = 7           # CUDA default stream as Kineto numbers it
BASE_TIME_NS = 1716301500000000000
START_US = 2_481_337.0  # first timestamp, µs after BASE_TIME_NS


# ---------------------------------------------------------------------------------------------------------
# Devices and the kernels each precision runs on them (names as cuBLAS / cuDNN / ATen print them).

DEVICES = {
    "a100": {
        "id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42298834944,
        "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 167936, "numSms": 108, "sharedMemPerBlockOptin": 166912,
    },
    "v100": {
        "id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079637504,
        "computeMajor": 7, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 98304, "numSms": 80, "sharedMemPerBlockOptin": 98304,
    },
}

# Per precision: kernel names for conv forward / data grad / weight grad and for the classifier GEMMs,
# the `Input type` ATen records, and how much slower than bf16 on an A100 the math kernels run.
PRECISIONS = {
    "bf16": {  # torch.autocast("cuda", dtype=torch.bfloat16) on an A100
        "dtype": "c10::BFloat16",
        "fprop": "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
        "dgrad": "sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
        "wgrad": "sm80_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nchw_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel",
        "gemm_nn": "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nn",
        "gemm_tn": "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn",
        "gemm_nt": "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nt",
        "cast": "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
        "autocast": True,
        "conv_scale": 1.0,
        "gemm_scale": 1.0,
        "token": "__nv_bfloat16",
    },
    "fp16": {  # torch.autocast("cuda", dtype=torch.float16) on a V100 (Tensor Cores: h884 / s884 kernels)
        "dtype": "c10::Half",
        "fprop": "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
        "dgrad": "volta_fp16_s884cudnn_fp16_128x128_ldg8_dgrad_f2f_exp_small_nhwc2nchw_tt_v1",
        "wgrad": "volta_fp16_s884cudnn_fp16_128x128_ldg8_wgrad_idx_exp_interior_nhwc_nt_v1",
        "gemm_nn": "volta_h884gemm_64x64_ldg8_nn",
        "gemm_tn": "volta_h884gemm_64x64_ldg8_tn",
        "gemm_nt": "volta_h884gemm_64x64_ldg8_nt",
        "cast": "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
        "autocast": True,
        "conv_scale": 2.1,
        "gemm_scale": 2.1,
        "token": "__half",
    },
    "fp32": {  # plain fp32 on a V100: no Tensor Cores at all
        "dtype": "float",
        "fprop": "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
        "dgrad": "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int, int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, unsigned long long, int, float, int, int, int)",
        "wgrad": "void cudnn::detail::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)",
        "gemm_nn": "volta_sgemm_128x64_nn",
        "gemm_tn": "volta_sgemm_128x64_tn",
        "gemm_nt": "volta_sgemm_128x64_nt",
        "cast": None,
        "autocast": False,
        "conv_scale": 5.8,
        "gemm_scale": 5.8,
        "token": "float",
    },
    "fp32_ampere": {  # plain fp32 on an A100: cuDNN convolutions use TF32 (allow_tf32 defaults to True for
        # cuDNN), matmuls do not (torch.backends.cuda.matmul.allow_tf32 defaults to False): ampere_sgemm
        "dtype": "float",
        "fprop": "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "dgrad": "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "wgrad": "sm80_xmma_wgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "gemm_nn": "ampere_sgemm_128x64_nn",
        "gemm_tn": "ampere_sgemm_128x64_tn",
        "gemm_nt": "ampere_sgemm_128x64_nt",
        "cast": None,
        "autocast": False,
        "conv_scale": 1.9,
        "gemm_scale": 7.0,
        "token": "float",
    },
    "tf32": {  # fp32 on an A100 with torch.set_float32_matmul_precision("high"): TF32 Tensor Core GEMMs
        "dtype": "float",
        "fprop": "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "dgrad": "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "wgrad": "sm80_xmma_wgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel",
        "gemm_nn": "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
        "gemm_tn": "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
        "gemm_nt": "sm80_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
        "cast": None,
        "autocast": False,
        "conv_scale": 1.9,
        "gemm_scale": 2.0,
        "token": "float",
    },
}

ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, {functor}, at::detail::Array<char*, {arity}> >(int, {functor}, at::detail::Array<char*, {arity}>)"
RELU_KERNEL = ELEMENTWISE.format(functor="at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() const::{lambda(c10::BFloat16)#1}", arity=2)
RELU_BWD_KERNEL = ELEMENTWISE.format(functor="at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}", arity=3)
FILL_KERNEL = ELEMENTWISE.format(functor="at::native::FillFunctor<float>", arity=1)
BN_FWD_KERNEL = "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, 512, true, 1>(cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)"
BN_BWD_KERNEL = "void cudnn::bn_bw_1C11_kernel_new<__nv_bfloat16, float, float2, 512, true, 1>(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16*, float const*, float*, float*, float const*, float const*, float)"
MAXPOOL_KERNEL = "void at::native::(anonymous namespace)::max_pool_forward_nchw<c10::BFloat16, float>(int, c10::BFloat16 const*, long, long, long, int, int, int, int, int, int, int, int, int, int, c10::BFloat16*, long*)"
MAXPOOL_BWD_KERNEL = "void at::native::(anonymous namespace)::max_pool_backward_nchw<c10::BFloat16, float>(c10::BFloat16 const*, long const*, int, long, long, long, int, int, int, int, int, int, int, int, int, int, c10::BFloat16*)"
MEAN_KERNEL = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4>)"
MEAN_BWD_KERNEL = ELEMENTWISE.format(functor="at::native::(anonymous namespace)::div_true_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}", arity=2)
LOG_SOFTMAX_KERNEL = "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"
LOG_SOFTMAX_BWD_KERNEL = "void (anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, (anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, int)"
NLL_KERNEL = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
NLL_BWD_KERNEL = "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)"
INDEX_KERNEL = "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&, bool)::{lambda(int)#1}>(long, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&, bool)::{lambda(int)#1})"
INDEX_PUT_KERNEL = "void at::native::(anonymous namespace)::indexing_backward_kernel<float, 4>(long const*, long const*, float const*, float*, long, long, long, long, bool)"
ARANGE_KERNEL = "void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>(int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}, function_traits<at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>::result_type*)"
MAX_KERNEL = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<long, at::native::func_wrapper_t<long, at::native::max_values_kernel_cuda_impl<long, long>(at::TensorIterator&)::{lambda(long, long)#1}>, unsigned int, long, 4> >(at::native::ReduceOp<long, at::native::func_wrapper_t<long, at::native::max_values_kernel_cuda_impl<long, long>(at::TensorIterator&)::{lambda(long, long)#1}>, unsigned int, long, 4>)"
LT_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<long, long, bool, at::native::(anonymous namespace)::CompareLTFunctor<long> >, at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor<long, long, bool, at::native::(anonymous namespace)::CompareLTFunctor<long> >, at::detail::Array<char*, 2>)"
ASSERT_ASYNC_KERNEL = "void at::native::(anonymous namespace)::_assert_async_cuda_kernel<bool>(bool const*)"
NEG_MEAN_KERNEL = MEAN_KERNEL.replace("c10::BFloat16", "float")
FOREACH_KERNEL = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<{depth}>, at::native::(anonymous namespace)::{functor}<float, {depth}, {r}, {w}>, {extra}>(at::native::(anonymous namespace)::TensorListMetadata<{depth}>, at::native::(anonymous namespace)::{functor}<float, {depth}, {r}, {w}>, {extra})"
FOREACH_ADD_SCALAR = FOREACH_KERNEL.format(depth=2, functor="BinaryOpListAlphaFunctor", r=2, w=1, extra="std::plus<float>, float")
FOREACH_MUL = FOREACH_KERNEL.format(depth=1, functor="BinaryOpScalarFunctor", r=1, w=1, extra="std::multiplies<float>, float")
FOREACH_ADD_LIST = FOREACH_KERNEL.format(depth=2, functor="BinaryOpListAlphaFunctor", r=2, w=2, extra="std::plus<float>, float")


# ---------------------------------------------------------------------------------------------------------
# The process model.

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


# ---------------------------------------------------------------------------------------------------------
# The program being profiled: switches for each mistake and its fix.

@dataclasses.dataclass
class Program:
    device: str = "a100"
    precision: str = "bf16"
    num_workers: int = 4
    pin_memory: bool = True
    loss: str = "buffer"          # buffer | tensor_every_step | module_every_step | module_once
    label_check: str = "none"     # none | assert_item | assert_async
    pick: str = "none"            # none | python_range | arange  (pred[range(n), target] vs torch.arange)
    set_to_none: bool = True
    non_blocking: bool = True     # images.to("cuda", non_blocking=...)
    optimizer: str = "foreach"    # foreach | single_tensor  (SGD(foreach=False))
    conv_bias: bool = False       # nn.Conv2d(..., bias=True) before nn.BatchNorm2d
    empty_cache: bool = False     # torch.cuda.empty_cache() at the end of every step
    launch_blocking: bool = False  # CUDA_LAUNCH_BLOCKING=1 left in the environment
    classes: int = 1000
    batch: int = 64
    head: str = "pool"            # pool: avgpool + Linear(512, classes) | mlp: Linear(8192, 4096) + Linear(4096, classes)
    resident_gb: float = 2.95     # GPU memory held outside the step (weights, optimizer state, other tensors)
    profile_from_start: bool = False  # schedule without wait/warmup: step 0 (lazy loading, allocator growth) recorded
    detect_anomaly: bool = False  # torch.autograd.set_detect_anomaly(True) left on
    preprocess: str = "workers"   # workers | main_thread: the batch normalised and resized on the training thread
    log_loss: bool = False        # running_loss += loss.item() at the end of every step


IMAGE = (3, 128, 128)
IMAGE_BYTES_PER_SAMPLE = IMAGE[0] * IMAGE[1] * IMAGE[2] * 4

# (in_channels, out_channels, kernel, input H=W, output H=W, bf16 fprop µs on an A100, followed by max pool)
CONVS = [
    (3, 64, 7, 128, 64, 180.0, True),
    (64, 128, 3, 32, 32, 250.0, False),
    (128, 256, 3, 32, 16, 220.0, False),
    (256, 512, 3, 16, 8, 200.0, False),
]
# The loss classes of each variant: (python frame of its forward, module class name).
LOSS_FRAMES = {
    "buffer": "train.py(18): forward",
    "tensor_every_step": "train.py(18): forward",
    "module_every_step": "train.py(18): forward",
    "module_once": "train.py(18): forward",
}


class TrainingLoop:
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

    def next_batch(self) -> None:
        sim = self.sim
        if self.p.num_workers == 0:
            name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        else:
            name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
        with sim.py("torch/utils/data/dataloader.py(701): __next__", overhead_us=3.0):
            with sim.op(name, cat="user_annotation", overhead_us=8.0):
                with sim.py("torch/utils/data/dataloader.py(757): _next_data" if self.p.num_workers == 0 else
                            "torch/utils/data/dataloader.py(1425): _next_data", overhead_us=3.0):
                    if self.p.num_workers == 0:
                        self.load_batch_in_process()
                    else:
                        self.wait_for_worker()

    def preprocess_batch(self) -> None:
        """images = preprocess(images) on the training thread: uint8 -> float, normalise, resize, all CPU ops
        that launch nothing while the GPU has run dry."""
        sim = self.sim
        with sim.py("pipeline.py(129): preprocess", overhead_us=6.0):
            with sim.op("aten::to", extra_args=self.shapes([[self.batch, 3, 144, 144], [], [], [], []],
                                                         ["unsigned char", "Scalar", "Scalar", "Scalar", "Scalar"])):
                with sim.op("aten::_to_copy"):
                    with sim.op("aten::copy_"):
                        sim.cpu(640.0)
            with sim.op("aten::sub_"):
                sim.cpu(380.0)
            with sim.op("aten::div_"):
                sim.cpu(410.0)
            with sim.py("torch/nn/functional.py(3868): interpolate", overhead_us=4.0):
                with sim.op("aten::upsample_bilinear2d"):
                    sim.cpu(1250.0)

    def log_loss(self) -> None:
        """running_loss += loss.item(): one float copied back, the host waits for the stream."""
        sim = self.sim
        with sim.op("aten::item"):
            with sim.op("aten::_local_scalar_dense"):
                sim.memcpy("DtoH", "Pageable", 4)
                sim.stream_synchronize()

    def load_batch_in_process(self) -> None:
        """num_workers=0: decoding and augmenting every sample of the batch on the training thread."""
        sim = self.sim
        with sim.py("torch/utils/data/_utils/fetch.py(46): fetch", overhead_us=4.0):
            with sim.py("torch/utils/data/_utils/fetch.py(51): <listcomp>", overhead_us=2.0):
                for _ in range(8):  # the Python tracer keeps only some of the 64 __getitem__ calls
                    with sim.py("torchvision/datasets/folder.py(229): __getitem__", overhead_us=3.0):
                        with sim.py("PIL/Image.py(3218): open", overhead_us=1.0):
                            sim.cpu(310.0)
                        with sim.py("torchvision/transforms/transforms.py(94): __call__", overhead_us=1.0):
                            with sim.op("aten::to"):
                                sim.cpu(60.0)
                            with sim.op("aten::div"):
                                sim.cpu(45.0)
                            with sim.op("aten::sub"):
                                sim.cpu(40.0)
                    sim.cpu(330.0)  # the samples whose frames were not recorded
            with sim.py("torch/utils/data/_utils/collate.py(316): default_collate", overhead_us=5.0):
                with sim.op("aten::stack", extra_args=self.shapes([[]], ["TensorList"])):
                    with sim.op("aten::cat"):
                        sim.cpu(900.0)
            if self.p.pin_memory:
                with sim.py("torch/utils/data/_utils/pin_memory.py(61): pin_memory", overhead_us=3.0):
                    with sim.op("aten::pin_memory"):
                        with sim.op("aten::_pin_memory"):
                            sim.cpu(420.0)

    def wait_for_worker(self) -> None:
        """num_workers>0: the batch is ready or arrives while the GPU still has queued work. Workers deliver
        batches at the rate the loop consumes them, so the host waits while the GPU is more than
        ~1.3 ms ahead of it (steady state of a producer-consumer queue)."""
        sim = self.sim
        with sim.py("torch/utils/data/dataloader.py(1391): _get_data", overhead_us=3.0):
            with sim.py("torch/utils/data/dataloader.py(1244): _try_get_data", overhead_us=3.0):
                lead = sim.stream_free - sim.now[MAIN_TID]
                sim.cpu(35.0)
                if lead > 1_300_000:
                    sim.now[MAIN_TID] += lead - 1_300_000 + sim.jitter(20_000)

    def copy_batch(self) -> None:
        sim = self.sim
        for nbytes, dims, dtype in ((self.batch * IMAGE_BYTES_PER_SAMPLE, [self.batch, *IMAGE], "float"), (self.batch * 8, [self.batch], "long int")):
            with sim.op("aten::to", extra_args=self.shapes([dims, [], [], [], [], []],
                                                          [dtype, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"])):
                with sim.op("aten::_to_copy"):
                    with sim.op("aten::empty_strided", overhead_us=3.0):
                        self.allocate(nbytes)
                    with sim.op("aten::copy_"):
                        sim.memcpy("HtoD", "Pinned" if self.p.pin_memory else "Pageable", nbytes)
                        if not self.p.non_blocking:  # copy_ without non_blocking: memcpy_and_sync
                            sim.stream_synchronize()

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

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): every cached block goes back to the driver (cudaFree each)."""
        sim = self.sim
        with sim.py("torch/cuda/memory.py(192): empty_cache", overhead_us=3.0):
            with sim.py("<built-in function _cuda_emptyCache>", overhead_us=2.0):
                for _ in range(len(CONVS) + 2):
                    sim.cuda_free()
        self.allocator_pool_empty = True


# ---------------------------------------------------------------------------------------------------------
# Writing a trace.

def record(program: Program, steps: int = 8, seed: int = 7) -> dict:
    loop = TrainingLoop(program, seed)
    sim = loop.sim
    sim.allocated = int(program.resident_gb * 1e9)
    sim.reserved = (sim.allocated // (1 << 21) + 160) * (1 << 21)
    sim.launch_blocking = program.launch_blocking
    sim.lazy_loading = True  # CUDA 12's default (CUDA_MODULE_LOADING=LAZY)
    skipped = 0 if program.profile_from_start else 2
    # Unrecorded schedule steps (wait, warmup): the GPU queue and the allocator are warm when recording starts.
    for number in range(skipped):
        loop.step(number)
    sim.recording = True
    window_start = sim.now[MAIN_TID]
    # GPU ops launched in the warm-up step that still run when recording starts are recorded (CUPTI reports
    # them), their launch calls are not.
    sim.events.extend(e for e in sim.unrecorded_gpu if e["ts"] + e["dur"] > sim._ts(window_start))
    sim.now[AUTOGRAD_TID] = max(sim.now[AUTOGRAD_TID], window_start)
    # Frames already on the stack when recording starts are recorded from that moment.
    outer = contextlib.ExitStack()
    outer.enter_context(sim.py("train.py(1): <module>", overhead_us=0.0))
    outer.enter_context(sim.py("train.py(60): train_one_epoch", overhead_us=0.0))
    for number in range(skipped, skipped + steps):
        loop.step(number)
    outer.close()
    window_end = max(sim.now[MAIN_TID], sim.stream_free) + 20_000
    events = sim.events
    meta = []
    for pid, tid, key, value in (
            (PID, 0, "process_name", {"name": "python3"}), (PID, 0, "process_labels", {"labels": "CPU"}),
            (PID, 0, "process_sort_index", {"sort_index": PID}),
            (0, 0, "process_name", {"name": "python3"}), (0, 0, "process_labels", {"labels": "GPU 0"}),
            (0, 0, "process_sort_index", {"sort_index": 5000000}),
            (0, STREAM, "thread_name", {"name": "stream 7 "}), (0, STREAM, "thread_sort_index", {"sort_index": STREAM}),
            (PID, MAIN_TID, "thread_name", {"name": "thread %d (python3)" % MAIN_TID}),
            (PID, MAIN_TID, "thread_sort_index", {"sort_index": MAIN_TID}),
            (PID, AUTOGRAD_TID, "thread_name", {"name": "thread %d (pt_autograd_0)" % AUTOGRAD_TID}),
            (PID, AUTOGRAD_TID, "thread_sort_index", {"sort_index": AUTOGRAD_TID})):
        meta.append({"name": key, "ph": "M", "ts": sim._ts(window_start), "pid": pid, "tid": tid, "args": value})
    order = {"user_annotation": 0, "cpu_op": 0, "cpu_instant_event": 1, "python_function": 2, "cuda_runtime": 3,
             "ac2g": 3, "kernel": 3, "gpu_memcpy": 3, "gpu_memset": 3, "gpu_user_annotation": 4}
    events.sort(key=lambda e: (order.get(e.get("cat", ""), 5), e["ts"]))
    tail = [
        {"ph": "X", "cat": "Trace", "ts": sim._ts(window_start), "dur": sim._dur(window_end - window_start),
         "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
        {"name": "process_sort_index", "ph": "M", "ts": sim._ts(window_start), "pid": "Spans", "tid": 0,
         "args": {"sort_index": 536870912}},
        {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
         "tid": "Trace PyTorch Profiler", "ts": sim._ts(window_start)},
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": sim._ts(window_end)},
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [DEVICES[program.device]],
        "cupti_version": 22,
        "cuda_runtime_version": 12040,
        "with_stack": 1,
        "record_shapes": 1,
        "profile_memory": 1,
        "cuda_driver_version": 12040,
        "trace_id": "5C2D%028X" % (abs(hash_program(program)) % (1 << 112)),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": BASE_TIME_NS,
        "traceEvents": events + meta + tail,
        "traceName": "/tmp/traces/%s.pt.trace.json" % "worker0",
    }


def hash_program(program: Program) -> int:
    """A stable (not salted) hash of the switches, for the trace_id. Switches at their default are left out
    from `preprocess` on, so adding a switch keeps the trace_id of every earlier trace."""
    switches = dataclasses.astuple(program)
    names = [field.name for field in dataclasses.fields(Program)]
    first_optional = names.index("preprocess")
    defaults = dataclasses.astuple(Program())
    switches = switches[:first_optional] + tuple(
        value for value, default in zip(switches[first_optional:], defaults[first_optional:]) if value != default)
    value = 1469598103934665603
    for byte in repr(switches).encode():
        value = ((value ^ byte) * 1099511628211) % (1 << 64)
    return value


def dump(trace: dict) -> bytes:
    """One event per line, as Kineto writes them, so a reader can grep the unzipped file."""
    head = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    out = io.StringIO()
    out.write("{\n")
    for key, value in head.items():
        out.write("  %s: %s,\n" % (json.dumps(key), json.dumps(value)))
    out.write('  "traceEvents": [\n')
    events = trace["traceEvents"]
    for i, event in enumerate(events):
        out.write("  " + json.dumps(event) + (",\n" if i + 1 < len(events) else "\n"))
    out.write("  ],\n")
    out.write('  "traceName": %s\n}\n' % json.dumps(trace["traceName"]))
    return out.getvalue().encode()


def write(name: str, program: Program, directory: str = HERE, steps: int = 8) -> None:
    data = dump(record(program, steps=steps))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + ".json.gz")
    buffer = io.BytesIO()
    # mtime=0 and no file name in the header: the same input always gives the same bytes.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    print("%-40s %7d bytes json, %6d bytes gz" % (name, len(data), len(buffer.getvalue())))


# ---------------------------------------------------------------------------------------------------------
# The scenarios: each mistake and its fix, plus the well-tuned loop.

WELL_TUNED = Program()

SCENARIOS = {
    # 1. weight = torch.Tensor([0.1] * n).cuda() inside the loss, every step  vs  register_buffer in __init__
    "01_loss_weight_every_step": dataclasses.replace(WELL_TUNED, loss="tensor_every_step"),
    "01_loss_weight_every_step_fixed": dataclasses.replace(WELL_TUNED, loss="buffer"),
    # 2. assert target.max() < n on a GPU tensor  vs  torch._assert_async (or the check in the data pipeline)
    "02_assert_on_gpu_tensor": dataclasses.replace(WELL_TUNED, label_check="assert_item"),
    "02_assert_on_gpu_tensor_fixed": dataclasses.replace(WELL_TUNED, label_check="assert_async"),
    # 3. logp[range(n), target]  vs  logp[torch.arange(n, device=logp.device), target]
    "03_python_list_index": dataclasses.replace(WELL_TUNED, pick="python_range"),
    "03_python_list_index_fixed": dataclasses.replace(WELL_TUNED, pick="arange"),
    # 4. nn.NLLLoss(weight) built inside forward  vs  built once in __init__
    "04_loss_module_built_in_step": dataclasses.replace(WELL_TUNED, loss="module_every_step"),
    "04_loss_module_built_in_step_fixed": dataclasses.replace(WELL_TUNED, loss="module_once"),
    # 5. DataLoader(num_workers=0)  vs  num_workers=4
    "05_dataloader_num_workers_0": dataclasses.replace(WELL_TUNED, num_workers=0),
    "05_dataloader_num_workers_0_fixed": dataclasses.replace(WELL_TUNED, num_workers=4),
    # 6. non_blocking copies from pageable memory  vs  pin_memory=True
    "06_pageable_batch_copy": dataclasses.replace(WELL_TUNED, pin_memory=False),
    "06_pageable_batch_copy_fixed": dataclasses.replace(WELL_TUNED, pin_memory=True),
    # 7. optimizer.zero_grad(set_to_none=False)  vs  set_to_none=True
    "07_zero_grad_without_set_to_none": dataclasses.replace(WELL_TUNED, set_to_none=False),
    "07_zero_grad_without_set_to_none_fixed": dataclasses.replace(WELL_TUNED, set_to_none=True),
    # 8. fp32 convolutions and matmuls on a V100  vs  autocast to fp16
    "08_fp32_on_v100": dataclasses.replace(WELL_TUNED, device="v100", precision="fp32"),
    "08_fp32_on_v100_fixed": dataclasses.replace(WELL_TUNED, device="v100", precision="fp16"),
    # 9. images.to("cuda") without non_blocking: the copy is followed by a stream sync every step
    "09_blocking_batch_copy": dataclasses.replace(WELL_TUNED, non_blocking=False),
    "09_blocking_batch_copy_fixed": dataclasses.replace(WELL_TUNED, non_blocking=True),
    # 10. SGD(foreach=False): three kernels per parameter tensor  vs  the foreach implementation
    "10_single_tensor_optimizer": dataclasses.replace(WELL_TUNED, optimizer="single_tensor"),
    "10_single_tensor_optimizer_fixed": dataclasses.replace(WELL_TUNED, optimizer="foreach"),
    # 11. nn.Conv2d(..., bias=True) right before nn.BatchNorm2d  vs  bias=False
    "11_conv_bias_before_batchnorm": dataclasses.replace(WELL_TUNED, conv_bias=True),
    "11_conv_bias_before_batchnorm_fixed": dataclasses.replace(WELL_TUNED, conv_bias=False),
    # 12. torch.cuda.empty_cache() at the end of every step  vs  not calling it
    "12_empty_cache_every_step": dataclasses.replace(WELL_TUNED, empty_cache=True),
    "12_empty_cache_every_step_fixed": dataclasses.replace(WELL_TUNED, empty_cache=False),
    # 13. CUDA_LAUNCH_BLOCKING=1 left in the job's environment  vs  unset
    "13_cuda_launch_blocking": dataclasses.replace(WELL_TUNED, launch_blocking=True),
    "13_cuda_launch_blocking_fixed": dataclasses.replace(WELL_TUNED, launch_blocking=False),
    # 14. fp32 on an A100 with a large MLP head: matmuls on ampere_sgemm  vs  set_float32_matmul_precision("high")
    "14_fp32_matmul_without_tf32": dataclasses.replace(WELL_TUNED, precision="fp32_ampere", head="mlp"),
    "14_fp32_matmul_without_tf32_fixed": dataclasses.replace(WELL_TUNED, precision="tf32", head="mlp"),
    # 15. bf16 classifier with 1001 classes (dims not a multiple of 8)  vs  padded to 1008
    "15_half_dims_not_multiple_of_8": dataclasses.replace(WELL_TUNED, classes=1001),
    "15_half_dims_not_multiple_of_8_fixed": dataclasses.replace(WELL_TUNED, classes=1008),
    # 16. batch 8: the GPU is mostly idle, waiting for launches, with 93% of its memory free  vs  batch 64
    "16_small_batch_memory_underused": dataclasses.replace(WELL_TUNED, batch=8),
    "16_small_batch_memory_underused_fixed": dataclasses.replace(WELL_TUNED, batch=64),
    # 17. 39 GB of the A100's 42 GB held outside the step (a large resident embedding table)  vs  30 GB
    "17_gpu_memory_nearly_full": dataclasses.replace(WELL_TUNED, resident_gb=39.0),
    "17_gpu_memory_nearly_full_fixed": dataclasses.replace(WELL_TUNED, resident_gb=30.0),
    # 18. profiler schedule without wait/warmup: step 0 (lazy module loading, allocator growth) is recorded
    "18_warmup_in_profiled_window": dataclasses.replace(WELL_TUNED, profile_from_start=True),
    "18_warmup_in_profiled_window_fixed": dataclasses.replace(WELL_TUNED, profile_from_start=False),
    # 19. torch.autograd.set_detect_anomaly(True) left on  vs  off
    "19_detect_anomaly": dataclasses.replace(WELL_TUNED, detect_anomaly=True),
    "19_detect_anomaly_fixed": dataclasses.replace(WELL_TUNED, detect_anomaly=False),
    # 20. images = preprocess(images) on the training thread after a loss.item() sync  vs  in the DataLoader workers
    "20_cpu_preprocess_in_step": dataclasses.replace(WELL_TUNED, preprocess="main_thread", log_loss=True),
    "20_cpu_preprocess_in_step_fixed": dataclasses.replace(WELL_TUNED, preprocess="workers", log_loss=True),
    # The well-tuned loop: bf16 autocast on an A100, 4 pinned workers, no syncs, set_to_none, foreach SGD.
    "well_tuned": WELL_TUNED,
}


def describe(name: str) -> str:
    """Figures of a written trace, for README.md: median step, GPU busy share, host waits."""
    with gzip.open(os.path.join(HERE, name + ".json.gz"), "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    mirrors = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "gpu_user_annotation")
    span = (min(steps[0][0], mirrors[0][0]), max(steps[-1][1], mirrors[-1][1]))
    busy, cursor = 0.0, span[0]
    for start, end in gpu:
        start, end = max(start, cursor), min(end, span[1])
        if end > start:
            busy += end - start
            cursor = end
    lengths = sorted(end - start for start, end in steps)
    syncs = sum(1 for e in events if e.get("name") == "cudaStreamSynchronize")
    return "%-40s median step %6.2f ms, GPU busy %5.1f%%, %d stream syncs" % (
        name, lengths[len(lengths) // 2] / 1000.0, 100.0 * busy / (span[1] - span[0]), syncs)


# Fixtures of rules PTA107-PTA121 (rules.d/<group>/<name>.tests/): the firing and the quiet program of the
# scenario each rule is about, recorded over 4 steps to keep them small.
RULES_DIR = os.path.join(HERE, "..", "..", "rules.d")
FIXTURES = {
    "memcpy/pageable-memcpy": "06_pageable_batch_copy",
    "memcpy/blocking-batch-copy": "09_blocking_batch_copy",
    "optimizer/zero-grad-without-set-to-none": "07_zero_grad_without_set_to_none",
    "optimizer/single-tensor-optimizer": "10_single_tensor_optimizer",
    "python-overhead/object-built-in-step": "04_loss_module_built_in_step",
    "model/conv-bias-before-batchnorm": "11_conv_bias_before_batchnorm",
    "memory/allocator-churn": "12_empty_cache_every_step",
    "debug-mode/anomaly-detection-enabled": "19_detect_anomaly",
    "debug-mode/launch-blocking-debug-mode": "13_cuda_launch_blocking",
    "tensor-cores/fp32-matmul-without-tf32": "14_fp32_matmul_without_tf32",
    "tensor-cores/half-precision-dims-not-multiple-of-8": "15_half_dims_not_multiple_of_8",
    "memory/gpu-memory-underused": "16_small_batch_memory_underused",
    "memory/gpu-memory-nearly-full": "17_gpu_memory_nearly_full",
    "profiling/warmup-in-profiled-window": "18_warmup_in_profiled_window",
    "host-work/host-bound-cpu-work": "20_cpu_preprocess_in_step",
}


def main() -> None:
    for name, program in SCENARIOS.items():
        write(name, program)
    for rule, scenario in FIXTURES.items():
        directory = os.path.join(RULES_DIR, rule + ".tests")
        write("fire", SCENARIOS[scenario], directory, steps=4)
        write("quiet", SCENARIOS[scenario + "_fixed"], directory, steps=4)
    for name in SCENARIOS:
        print(describe(name))


if __name__ == "__main__":
    main()
