"""The GPUs the scenarios run on, the kernels each precision runs on them and the other kernel names the
training loop launches (as cuBLAS, cuDNN and ATen print them). Data only; see make_scenarios.py."""

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
