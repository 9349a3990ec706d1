// Every real trace of ../shared/traces loads without error, truncation or malformed events, with the
// exact event counts by kind. The expected numbers were computed independently from the JSON with Python
// (json.load; X events by category, i/I events as memory or instant).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ptadvise/loader.h"
#include "corpus_traces.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace {

struct ExpectedCounts {
  const char* file;
  uint64_t entries;  // entries of traceEvents (or of the bare array)
  size_t events;     // stored events (X, i, I)
  std::map<std::string, size_t> by_kind;
};

const std::vector<ExpectedCounts>& expected_counts() {
  static const std::vector<ExpectedCounts> table{
    {"HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", 220, 115, {{"cpu_op", 70}, {"cuda_runtime", 21}, {"gpu_memcpy", 2}, {"gpu_user_annotation", 2}, {"instant", 2}, {"kernel", 14}, {"other", 1}, {"user_annotation", 3}}},
    {"HTA__tests__data__call_stack__backward_thread.json", 7, 7, {{"cpu_op", 3}, {"cuda_runtime", 1}, {"kernel", 1}, {"user_annotation", 2}}},
    {"HTA__tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 30, 18, {{"cpu_op", 4}, {"instant", 2}, {"other", 1}, {"user_annotation", 11}}},
    {"HTA__tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", 1408, 870, {{"cpu_op", 359}, {"cuda_runtime", 361}, {"cuda_sync", 41}, {"gpu_memcpy", 16}, {"gpu_memset", 3}, {"instant", 2}, {"kernel", 79}, {"other", 1}, {"user_annotation", 8}}},
    {"HTA__tests__data__critical_path__cuda_event_sync__event_sync_trace.json.gz", 92, 35, {{"cpu_op", 10}, {"cuda_runtime", 12}, {"cuda_sync", 4}, {"gpu_memcpy", 1}, {"instant", 2}, {"kernel", 4}, {"other", 1}, {"user_annotation", 1}}},
    {"HTA__tests__data__critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz", 149, 59, {{"cpu_op", 6}, {"cuda_runtime", 39}, {"cuda_sync", 5}, {"gpu_memset", 3}, {"instant", 2}, {"kernel", 3}, {"other", 1}}},
    {"HTA__tests__data__critical_path__end_to_end__simple_add__output__overlaid_critical_path_trace.json.gz", 1732, 840, {{"cpu_op", 359}, {"cuda_runtime", 331}, {"cuda_sync", 41}, {"gpu_memcpy", 16}, {"gpu_memset", 3}, {"instant", 2}, {"kernel", 79}, {"other", 1}, {"user_annotation", 8}}},
    {"HTA__tests__data__critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz", 1348, 840, {{"cpu_op", 359}, {"cuda_runtime", 331}, {"cuda_sync", 41}, {"gpu_memcpy", 16}, {"gpu_memset", 3}, {"instant", 2}, {"kernel", 79}, {"other", 1}, {"user_annotation", 8}}},
    {"HTA__tests__data__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz", 4222, 2327, {{"cpu_op", 375}, {"cuda_runtime", 1862}, {"instant", 3}, {"other", 79}, {"user_annotation", 8}}},
    {"HTA__tests__data__df_index_resolver__df_index_resolver.json.gz", 216092, 151391, {{"cpu_op", 56680}, {"cuda_runtime", 42373}, {"gpu_memcpy", 2040}, {"gpu_memset", 880}, {"instant", 2}, {"kernel", 19370}, {"memory", 28010}, {"other", 1}, {"user_annotation", 2035}}},
    {"HTA__tests__data__distributed_info_unavailable__distributed_info_not_found.json.gz", 2467, 2467, {{"cpu_op", 2424}, {"user_annotation", 43}}},
    {"HTA__tests__data__execution_trace__benchmark_simple_add_trace.json.gz", 111, 58, {{"cpu_op", 28}, {"cuda_runtime", 15}, {"instant", 2}, {"kernel", 4}, {"other", 1}, {"user_annotation", 8}}},
    {"HTA__tests__data__large_integer_trace__rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz", 2, 2, {{"cpu_op", 1}, {"kernel", 1}}},
    {"HTA__tests__data__mtia_inference_trace__mtia_inference_rank_0.json.gz", 16158, 14181, {{"cpu_op", 10346}, {"instant", 2}, {"other", 2137}, {"user_annotation", 1696}}},
    {"HTA__tests__data__mtia_trace_single_rank__mtia_rank_0.json.gz", 455739, 138377, {{"cpu_op", 108889}, {"instant", 4}, {"other", 29270}, {"user_annotation", 214}}},
    {"HTA__tests__data__nccl_parser_config__nccl_data.json.gz", 40573, 26935, {{"cpu_op", 14346}, {"cuda_runtime", 8740}, {"gpu_memcpy", 960}, {"gpu_memset", 114}, {"gpu_user_annotation", 30}, {"instant", 2}, {"kernel", 2700}, {"other", 1}, {"user_annotation", 42}}},
    {"HTA__tests__data__negative_queue_length_values_check__rank0.json.gz", 108936, 67219, {{"cpu_op", 25185}, {"cuda_runtime", 33924}, {"gpu_memcpy", 1390}, {"gpu_memset", 277}, {"instant", 2}, {"kernel", 6080}, {"other", 1}, {"user_annotation", 360}}},
    {"HTA__tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 68692, 45422, {{"cpu_op", 23910}, {"cuda_runtime", 15329}, {"gpu_memcpy", 1600}, {"gpu_memset", 145}, {"gpu_user_annotation", 15}, {"instant", 2}, {"kernel", 4350}, {"other", 1}, {"user_annotation", 70}}},
    {"HTA__tests__data__rank_non_gpu__rank_non_gpu.json.gz", 2467, 2467, {{"cpu_op", 2424}, {"user_annotation", 43}}},
    {"HTA__tests__data__rank_unavailable__rank_not_found.json.gz", 2467, 2467, {{"cpu_op", 2424}, {"user_annotation", 43}}},
    {"HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz", 4855, 4811, {{"cpu_op", 2329}, {"cuda_runtime", 1204}, {"gpu_memcpy", 40}, {"gpu_memset", 10}, {"kernel", 1154}, {"other", 1}, {"user_annotation", 73}}},
    {"HTA__tests__data__trace_compare__base__base.json.gz", 33, 33, {{"cpu_op", 6}, {"cuda_runtime", 5}, {"gpu_memcpy", 6}, {"gpu_memset", 6}, {"kernel", 6}, {"user_annotation", 4}}},
    {"HTA__tests__data__trace_compare__test__test.json.gz", 34, 34, {{"cpu_op", 9}, {"cuda_runtime", 5}, {"gpu_memcpy", 6}, {"gpu_memset", 6}, {"kernel", 5}, {"user_annotation", 3}}},
    {"HTA__tests__data__trace_file_list__inference_rank_1.json.gz", 54, 14, {{"cuda_runtime", 8}, {"instant", 1}, {"kernel", 4}, {"other", 1}}},
    {"HTA__tests__data__trace_filter__sampled_rank-1.json.gz", 4720, 4676, {{"cpu_op", 2302}, {"cuda_runtime", 1154}, {"gpu_memcpy", 40}, {"gpu_memset", 10}, {"kernel", 1104}, {"other", 1}, {"user_annotation", 65}}},
    {"HTA__tests__data__triton_example__triton_example.json.gz", 71, 10, {{"cpu_op", 3}, {"cuda_driver", 1}, {"cuda_runtime", 1}, {"instant", 2}, {"kernel", 1}, {"other", 1}, {"user_annotation", 1}}},
    {"HTA__tests__data__with_gpu_user_annotation__step_based_trace_2543932.json.gz", 1344, 986, {{"cpu_op", 643}, {"cuda_runtime", 180}, {"gpu_memcpy", 10}, {"gpu_user_annotation", 10}, {"instant", 2}, {"kernel", 130}, {"other", 1}, {"user_annotation", 10}}},
    {"TraceLens__agent_evals__unit_tests_standalone.tar.gz__gemm_04_memory_tall_skinny.json", 19853, 19789, {{"cpu_op", 10}, {"cuda_runtime", 22}, {"instant", 2}, {"kernel", 10}, {"other", 1}, {"python_function", 19744}}},
    {"TraceLens__agent_evals__unit_tests_standalone.tar.gz__sdpa_03_short_seq_overhead.json", 585, 465, {{"cpu_op", 270}, {"cuda_runtime", 52}, {"instant", 2}, {"kernel", 10}, {"other", 1}, {"python_function", 130}}},
    {"TraceLens__tests__traces__b200__eager_trace.json.gz", 24656, 22355, {{"cpu_op", 4809}, {"cuda_driver", 221}, {"cuda_runtime", 1151}, {"gpu_memcpy", 161}, {"gpu_user_annotation", 3}, {"kernel", 768}, {"other", 9}, {"python_function", 15230}, {"user_annotation", 3}}},
    {"TraceLens__tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz", 5138, 4539, {{"cpu_op", 1258}, {"cuda_driver", 49}, {"cuda_runtime", 334}, {"gpu_memset", 2}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 154}, {"memory", 620}, {"other", 1}, {"python_function", 2117}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 18221, 14532, {{"cpu_op", 4186}, {"cuda_driver", 1}, {"cuda_runtime", 1921}, {"gpu_memcpy", 1}, {"gpu_memset", 241}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 1465}, {"memory", 2450}, {"other", 1}, {"python_function", 4262}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz", 50125, 48602, {{"cpu_op", 3540}, {"cuda_driver", 48}, {"cuda_runtime", 881}, {"gpu_memcpy", 2}, {"gpu_memset", 86}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 446}, {"memory", 1264}, {"other", 1}, {"python_function", 42330}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz", 2551, 2298, {{"cpu_op", 479}, {"cuda_driver", 22}, {"cuda_runtime", 110}, {"gpu_memcpy", 1}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 60}, {"memory", 236}, {"other", 1}, {"python_function", 1385}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__h100__google_owlv2-large-patch14-ensemble__1016001.json.gz", 132152, 117635, {{"cpu_op", 24378}, {"cuda_driver", 725}, {"cuda_runtime", 8567}, {"gpu_memcpy", 85}, {"gpu_memset", 750}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 4330}, {"memory", 13474}, {"other", 3}, {"python_function", 65313}, {"user_annotation", 7}}},
    {"TraceLens__tests__traces__inference__sglang_decode__capture_traces__bs_32_rank0.json.gz", 61713, 60151, {{"cpu_op", 3556}, {"cuda_runtime", 1500}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 2}, {"memory", 1014}, {"other", 1}, {"python_function", 54073}, {"user_annotation", 2}}},
    {"TraceLens__tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz", 2058, 1471, {{"cpu_op", 61}, {"cuda_runtime", 29}, {"gpu_memcpy", 3}, {"kernel", 555}, {"python_function", 821}, {"user_annotation", 2}}},
    {"TraceLens__tests__traces__inference__sglang_prefilldecode__sglang_Qwen3-8B_prefilldecode.json.gz", 60315, 58712, {{"cpu_op", 3786}, {"cuda_runtime", 1069}, {"gpu_memcpy", 7}, {"kernel", 527}, {"python_function", 53321}, {"user_annotation", 2}}},
    {"TraceLens__tests__traces__inference__vllm_decode_full__capture_traces__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz", 131243, 128047, {{"cpu_op", 3819}, {"cuda_runtime", 3128}, {"gpu_memcpy", 3}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 7}, {"memory", 1184}, {"other", 1}, {"python_function", 119876}, {"user_annotation", 26}}},
    {"TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz", 1993, 1539, {{"cpu_op", 100}, {"cuda_runtime", 20}, {"gpu_memcpy", 9}, {"kernel", 425}, {"python_function", 984}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__inference__vllm_prefilldecode_piecewise__capture_traces__graph_capture_rank_0.1773709679453551615.pt.trace.json.gz", 122257, 118915, {{"cpu_op", 3611}, {"cuda_runtime", 3184}, {"gpu_memcpy", 1}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 99}, {"memory", 1114}, {"other", 1}, {"python_function", 110876}, {"user_annotation", 26}}},
    {"TraceLens__tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz", 19289, 18485, {{"cpu_op", 642}, {"cuda_runtime", 381}, {"gpu_memcpy", 10}, {"kernel", 413}, {"python_function", 17038}, {"user_annotation", 1}}},
    {"TraceLens__tests__traces__inference__xdit_flux.1__capture_traces__capture_trace_rank_0.json.gz", 193255, 181601, {{"cpu_op", 7538}, {"cuda_runtime", 9039}, {"gpu_memcpy", 15}, {"gpu_user_annotation", 3}, {"instant", 2}, {"kernel", 2540}, {"other", 1}, {"python_function", 162461}, {"user_annotation", 2}}},
    {"TraceLens__tests__traces__inference__xdit_flux.1_aiter_sage__capture_traces__capture_trace_rank_0.json.gz", 215890, 201248, {{"cpu_op", 7883}, {"cuda_runtime", 11454}, {"gpu_memcpy", 15}, {"gpu_user_annotation", 3}, {"instant", 2}, {"kernel", 3113}, {"other", 1}, {"python_function", 178775}, {"user_annotation", 2}}},
    {"TraceLens__tests__traces__inference__xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz", 229459, 218575, {{"cpu_op", 6409}, {"cuda_runtime", 2958}, {"gpu_memcpy", 36}, {"gpu_user_annotation", 5}, {"instant", 2}, {"kernel", 7830}, {"other", 1}, {"python_function", 201328}, {"user_annotation", 6}}},
    {"TraceLens__tests__traces__inference__xdit_sd_3.5__profile_trace_rank_0.json.gz", 239093, 200516, {{"cpu_op", 27354}, {"cuda_runtime", 30453}, {"gpu_memcpy", 23}, {"gpu_memset", 1}, {"gpu_user_annotation", 5}, {"instant", 2}, {"kernel", 8042}, {"other", 1}, {"python_function", 134628}, {"user_annotation", 7}}},
    {"TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz", 2443, 1196, {{"cuda_runtime", 631}, {"instant", 2}, {"kernel", 562}, {"other", 1}}},
    {"TraceLens__tests__traces__perf_model__normalization__normalization_layer_test.json.gz", 8500, 7929, {{"cpu_op", 978}, {"cuda_runtime", 236}, {"gpu_memset", 5}, {"gpu_user_annotation", 30}, {"instant", 2}, {"kernel", 168}, {"memory", 475}, {"other", 1}, {"python_function", 6004}, {"user_annotation", 30}}},
    {"TraceLens__tests__traces__torch_compile_triton__trace.json.gz", 246, 117, {{"cpu_op", 41}, {"cuda_runtime", 59}, {"gpu_user_annotation", 1}, {"instant", 2}, {"kernel", 12}, {"other", 1}, {"user_annotation", 1}}},
    {"kineto__docs__traces__after_fix_trace.json", 75, 11, {{"cpu_op", 4}, {"cuda_runtime", 1}, {"cuda_sync", 2}, {"instant", 2}, {"kernel", 1}, {"other", 1}}},
    {"kineto__docs__traces__before_fix_trace.json", 75, 11, {{"cpu_op", 4}, {"cuda_runtime", 1}, {"cuda_sync", 2}, {"instant", 2}, {"kernel", 1}, {"other", 1}}},
    {"kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz", 82276, 63167, {{"cpu_op", 42438}, {"cuda_runtime", 10800}, {"gpu_memcpy", 12}, {"gpu_memset", 377}, {"instant", 1}, {"kernel", 9538}, {"other", 1}}},
    {"kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz", 76898, 57976, {{"cpu_op", 37434}, {"cuda_runtime", 10692}, {"gpu_memcpy", 12}, {"gpu_memset", 352}, {"instant", 1}, {"kernel", 9484}, {"other", 1}}},
    {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz", 73639, 54322, {{"cpu_op", 33384}, {"cuda_runtime", 10920}, {"gpu_memcpy", 12}, {"gpu_memset", 439}, {"instant", 2}, {"kernel", 9564}, {"other", 1}}},
    {"kineto__tb_plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz", 67781, 48894, {{"cpu_op", 28386}, {"cuda_runtime", 10686}, {"gpu_memcpy", 12}, {"gpu_memset", 351}, {"instant", 2}, {"kernel", 9456}, {"other", 1}}},
    {"kineto__tb_plugin__test__gpu_metrics_input.json", 340, 256, {{"cpu_op", 179}, {"cuda_runtime", 42}, {"gpu_memcpy", 2}, {"instant", 2}, {"kernel", 30}, {"other", 1}}},
  };
  return table;
}

}  // namespace

TEST_CASE("corpus: every shared trace loads with the exact event counts by kind") {
  if (!std::filesystem::is_directory(ptadvise::testing::corpus_dir())) {
    MESSAGE("skipped: " << ptadvise::testing::corpus_dir() << " is absent (the shared traces sit beside the project)");
    return;
  }
  std::map<std::string, const ExpectedCounts*> by_file;
  for (const ExpectedCounts& row : expected_counts()) by_file[row.file] = &row;

  size_t loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ptadvise::testing::corpus_dir())) {
    std::string name = entry.path().filename().string();
    if (name.size() < 5 || (name.substr(name.size() - 5) != ".json" &&
                            (name.size() < 8 || name.substr(name.size() - 8) != ".json.gz"))) {
      continue;
    }
    CAPTURE(name);
    auto found = by_file.find(name);
    CHECK_MESSAGE(found != by_file.end(), "a new trace in the corpus: add its expected counts");
    auto result = ptadvise::load_trace_file(entry.path().string());
    if (auto* error = std::get_if<ptadvise::LoadError>(&result)) {
      FAIL_CHECK(error->message);
      continue;
    }
    ++loaded;
    const ptadvise::Timeline& timeline = std::get<ptadvise::Timeline>(result);
    CHECK(timeline.stats.truncated_bytes == 0);
    CHECK(timeline.stats.malformed_events == 0);
    CHECK(timeline.stats.recovered_errors == 0);
    CHECK(timeline.stats.warnings.empty());
    if (found == by_file.end()) continue;
    const ExpectedCounts& expected = *found->second;
    CHECK(timeline.stats.events_seen == expected.entries);
    CHECK(timeline.events.size() == expected.events);
    std::map<std::string, size_t> by_kind;
    for (ptadvise::EventKind kind : timeline.events.kind) ++by_kind[std::string(ptadvise::to_string(kind))];
    CHECK(by_kind == expected.by_kind);
  }
  CHECK(loaded == expected_counts().size());
}

TEST_CASE("corpus: format, rank, devices and timestamps of a few eras") {
  if (!std::filesystem::is_directory(ptadvise::testing::corpus_dir())) {
    MESSAGE("skipped: " << ptadvise::testing::corpus_dir() << " is absent (the shared traces sit beside the project)");
    return;
  }
  auto load = [](const std::string& file) {
    auto result = ptadvise::load_trace_file(ptadvise::testing::corpus_dir() + file);
    REQUIRE(std::holds_alternative<ptadvise::Timeline>(result));
    return std::move(std::get<ptadvise::Timeline>(result));
  };

  SUBCASE("2020 bare array") {
    ptadvise::Timeline timeline = load("kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz");
    CHECK(timeline.format == "kineto-array");
    CHECK(timeline.flow_correlation.size() == 9162);  // "async" flow starts
    CHECK_FALSE(timeline.rank.has_value());
  }
  SUBCASE("2021 object with capitalised categories") {
    ptadvise::Timeline timeline = load("kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz");
    CHECK(timeline.format == "kineto");
    CHECK(timeline.origin_ns == 1610366662254282000);
  }
  SUBCASE("float µs relative to baseTimeNanoseconds") {
    ptadvise::Timeline timeline = load("TraceLens__tests__traces__b200__eager_trace.json.gz");
    CHECK(timeline.rank == 0);
    REQUIRE(timeline.devices.size() == 8);
    CHECK(timeline.devices[0].name == "NVIDIA B200");
    CHECK(timeline.devices[0].compute_major == 10);
    CHECK(timeline.devices[0].num_sms == 148);
    CHECK(timeline.origin_ns == 1768554939862757064);
  }
  SUBCASE("an integer above int64 in args") {
    ptadvise::Timeline timeline =
        load("HTA__tests__data__large_integer_trace__rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz");
    REQUIRE(timeline.events.size() == 2);
    CHECK(timeline.arg_int(1, "Comms Id") == std::nullopt);
    CHECK(timeline.arg_string(1, "Comms Id") == "10159970886766084423");
  }
  SUBCASE("distributedInfo after traceEvents") {
    ptadvise::Timeline timeline =
        load("HTA__tests__data__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz");
    CHECK(timeline.rank == 0);
    CHECK(timeline.world_size == 1);
  }
}

TEST_SUITE_END();
