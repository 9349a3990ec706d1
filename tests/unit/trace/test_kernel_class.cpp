// The kernel family table (data/kernel_families.yaml): the shipped table on real kernel names of the shared
// corpus, the table language (errors with positions, first row wins, user tables first).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <variant>

#include "ptadvise/analysis.h"
#include "ptadvise/kernel_class.h"
#include "ptadvise/loader.h"

using namespace ptadvise;

namespace {

KernelFamily family(std::string_view name) { return KernelClassifier::builtin().classify(name); }

std::string kernel_table_error(std::string_view yaml) {
  auto parsed = KernelClassifier::parse(yaml, "t.yaml");
  if (auto* error = std::get_if<KernelTableError>(&parsed)) return error->message;
  return "";
}

std::filesystem::path corpus(const char* file) {
  return std::filesystem::path(PTADVISE_SHARED_DIR) / "traces" / file;
}

// Kernel time (µs) per family over every kernel of a corpus trace.
std::map<KernelFamily, double> family_us(const Timeline& timeline, const Analysis& analysis) {
  std::map<KernelFamily, double> us;
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.events.kind[i] == EventKind::Kernel) us[analysis.family_of(i)] += timeline.events.dur_ns[i] / 1000.0;
  }
  return us;
}

}  // namespace

TEST_CASE("kernel families: names round-trip") {
  for (size_t f = 0; f < kKernelFamilyCount; ++f) {
    auto family_value = static_cast<KernelFamily>(f);
    CHECK(parse_kernel_family(to_string(family_value)) == family_value);
  }
  CHECK_FALSE(parse_kernel_family("tensor-core").has_value());
  CHECK(is_matmul(KernelFamily::MatmulSimt));
  CHECK_FALSE(is_matmul(KernelFamily::Communication));
}

TEST_CASE("kernel families: the shipped table sorts real kernel names") {
  // NVIDIA Tensor Cores: cuBLAS/cuDNN xmma on A100/H100, CUTLASS tensorop, nvjet, B200 FP8/FP4 and attention.
  CHECK(family("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
               "kernel__5x_cublas") == KernelFamily::MatmulTensorCore);
  CHECK(family("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_"
               "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn") == KernelFamily::MatmulTensorCore);
  CHECK(family("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1>(cutlass_75_tensorop_"
               "bf16_s1688gemm_bf16_128x128_nn_align1::Params)") == KernelFamily::MatmulTensorCore);
  CHECK(family("nvjet_tst_192x8_64x8_4x1_v_bz_TNT") == KernelFamily::MatmulTensorCore);
  CHECK(family("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_"
               "schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f") == KernelFamily::MatmulTensorCore);
  CHECK(family("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext") ==
        KernelFamily::MatmulTensorCore);
  // An FP8 grouped GEMM as Kineto records it on an H800 (CUTLASS 3 grouped kernel, DeepGEMM's grouped kernel).
  CHECK(family("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<"
               "cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
               "MainloopSm90ArrayTmaGmmaWarpSpecializedFP8BlockScaledAccum<4, cute::tuple<cute::C<1>, cute::C<1>, "
               "cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum>, "
               "cutlass::float_e4m3_t, cutlass::float_e4m3_t> > >(cutlass::gemm::kernel::GemmUniversal::Params)") ==
        KernelFamily::MatmulTensorCore);
  CHECK(family("void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 8u, 8u, 128u, 4u, "
               "(deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*, unsigned int)") == KernelFamily::MatmulTensorCore);
  // AMD Matrix Cores: Tensile MFMA (MI210/MI300), MIOpen gtcx, Composable Kernel xdl, CK tile attention.
  CHECK(family("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_"
               "CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1") == KernelFamily::MatmulTensorCore);
  CHECK(family("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x64_wt32x32x8_ws1x1_wr1x1_ta1x4x1x4_1x16x1x16_tb1x4x1x4_"
               "1x16x1x16_gkgs") == KernelFamily::MatmulTensorCore);
  CHECK(family("_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3INS_34GridwiseGemm"
               "MultiD_xdl_cshuffle_v3") == KernelFamily::MatmulTensorCore);
  // Matrix work on the FP32 units: V100/A100 sgemm, cuDNN's fp32 engines, CUTLASS SIMT, gemv.
  CHECK(family("volta_sgemm_128x64_nn") == KernelFamily::MatmulSimt);
  CHECK(family("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, true, true>(int, int, int, "
               "float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, "
               "float const*, float const*, bool, int, int)") == KernelFamily::MatmulSimt);
  CHECK(family("void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_"
               "align1::Params)") == KernelFamily::MatmulSimt);
  CHECK(family("volta_scudnn_128x64_relu_interior_nn_v1") == KernelFamily::MatmulSimt);
  // Names that only look like matrix work.
  CHECK(family("void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(float const*, float "
               "const*, int, int, unsigned char*, bool)") == KernelFamily::Other);
  CHECK(family("batched_transpose_64x32_pack_4x2_ediv_2x1_half") == KernelFamily::Copy);
  CHECK(family("SubTensorOpWithScalar1d") == KernelFamily::Other);
  CHECK(family("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, "
               "c10::BFloat16 const*, float const*)") == KernelFamily::Other);
  CHECK(family("triton_red_fused__to_copy_add_addmm_as_strided_fmha_v3_fwd_mean_mul_neg_pow_rsqrt_stack_unbind_"
               "unsqueeze_view_24") == KernelFamily::Reduction);
  // Communication.
  CHECK(family("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") ==
        KernelFamily::Communication);
  CHECK(family("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == KernelFamily::Communication);
  CHECK(family("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned "
               "long, unsigned int**, unsigned long, unsigned long)") == KernelFamily::Communication);
  // The rest.
  CHECK(family("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(float*)") ==
        KernelFamily::Copy);
  CHECK(family("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)") ==
        KernelFamily::Reduction);
  CHECK(family("triton_poi_fused_clone_transpose_21") == KernelFamily::Elementwise);
  CHECK(family("spin_kernel") == KernelFamily::Other);
}

TEST_CASE("kernel families: every kernel of real traces gets the family its name says") {
  struct Case {
    const char* file;
    KernelFamily family;
    double us;  // kernel time of that family over the whole trace
  };
  // Kernel time of the family over the raw events, from tests/tools/kernel_families.py (µs, 0.5% tolerance).
  const Case cases[] = {
      // MI210: Tensile MFMA GEMMs and MIOpen gtcx convolutions on Matrix Cores
      {"TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz", KernelFamily::MatmulTensorCore, 1710.492},
      // the NCCL trace: all-reduce kernels on side streams
      {"HTA__tests__data__nccl_parser_config__nccl_data.json.gz", KernelFamily::Communication, 46876.493},
      // V100 resnet50 in fp32: sgemm and scudnn
      {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz", KernelFamily::MatmulSimt, 434683.0},
  };
  for (const Case& c : cases) {
    const auto path = corpus(c.file);
    if (!std::filesystem::exists(path)) {
      MESSAGE("skipped: " << path.string() << " is absent (the shared traces live beside the project)");
      continue;
    }
    CAPTURE(c.file);
    auto loaded = load_trace_file(path.string());
    REQUIRE(std::holds_alternative<Timeline>(loaded));
    const Timeline& timeline = std::get<Timeline>(loaded);
    Analysis analysis = analyze(timeline);
    auto us = family_us(timeline, analysis);
    CHECK(us[c.family] == doctest::Approx(c.us).epsilon(0.005));
  }
}

TEST_CASE("kernel families: table errors name the file, line and column") {
  CHECK(kernel_table_error("rules:\n  - family: tensor\n    glob: ['x*']\n") ==
        "t.yaml:2:13: rules[0].family: unknown family 'tensor'; expected one of matmul-tensor-core, matmul-simt, "
        "communication, copy, elementwise, reduction, other");
  CHECK(kernel_table_error("rules:\n  - family: copy\n") == "t.yaml:2:5: rules[0]: expected `glob:` or `regex:`");
  CHECK(kernel_table_error("rules:\n  - family: copy\n    regex: 'a(('\n").starts_with(
      "t.yaml:3:12: rules[0].regex: invalid regular expression: "));
  CHECK(kernel_table_error("rules:\n  - family: copy\n    glob: x\n    colour: red\n") ==
        "t.yaml:4:5: rules[0].colour: unknown key; expected one of family, glob, regex, examples, why");
  CHECK(kernel_table_error("rules: {}\n") == "t.yaml:1:8: rules: expected a list of rows");
  CHECK(kernel_table_error("version: 2\nrules: []\n") == "t.yaml:1:10: version: expected 1");
  CHECK(kernel_table_error("rules:\n  - family: copy\n    glob: ['*copy*']\n    examples: [gemm]\n") ==
        "t.yaml:2: example 'gemm' is classified as other (no row matches), not as copy");
  CHECK(kernel_table_error("rules: [\n") .starts_with("t.yaml:2:1: yaml: "));
}

TEST_CASE("kernel families: first row wins; a user's table is tried before the shipped one") {
  auto parsed = KernelClassifier::parse(
      "rules:\n"
      "  - family: communication\n    glob: ['my_allreduce_*']\n    examples: [my_allreduce_bf16]\n"
      "  - family: copy\n    glob: ['my_*']\n"
      "  - family: elementwise\n    regex: ['^volta_sgemm']\n",
      "user.yaml");
  REQUIRE(std::holds_alternative<KernelClassifier>(parsed));
  const auto& user = std::get<KernelClassifier>(parsed);
  CHECK(user.classify("my_allreduce_fp32") == KernelFamily::Communication);
  CHECK(user.classify("my_gather") == KernelFamily::Copy);
  CHECK(user.classify("void my_gather<int>()") == KernelFamily::Copy);  // the return type is not part of the name
  CHECK(user.classify("xmy_gather") == KernelFamily::Other);            // globs match the whole name
  CHECK(user.rule_for("my_gather")->origin == "user.yaml:5");
  auto combined = KernelClassifier::builtin().extended_by(user);
  REQUIRE(std::holds_alternative<KernelClassifier>(combined));
  const auto& table = std::get<KernelClassifier>(combined);
  CHECK(table.classify("volta_sgemm_128x64_nn") == KernelFamily::Elementwise);  // the user's row wins
  CHECK(table.classify("ncclKernel_AllReduce") == KernelFamily::Communication);  // the shipped rows still apply

  // From files, as `--kernel-families` and the `kernel_families:` key give them.
  const auto dir = std::filesystem::temp_directory_path() / "ptadvise_kernel_class_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "families.yaml").string();
  std::ofstream(file) << "rules:\n  - family: communication\n    glob: ['my_allreduce_*']\n";
  auto loaded = kernel_classifier_with({file});
  REQUIRE(std::holds_alternative<KernelClassifier>(loaded));
  CHECK(std::get<KernelClassifier>(loaded).classify("my_allreduce_x") == KernelFamily::Communication);
  CHECK(std::get<KernelClassifier>(loaded).classify("volta_sgemm_128x64_nn") == KernelFamily::MatmulSimt);
  auto missing = kernel_classifier_with({(dir / "absent.yaml").string()});
  REQUIRE(std::holds_alternative<KernelTableError>(missing));
  CHECK(std::get<KernelTableError>(missing).message ==
        (dir / "absent.yaml").string() + ": cannot read the kernel family table: No such file or directory");
  std::filesystem::remove_all(dir);
}
