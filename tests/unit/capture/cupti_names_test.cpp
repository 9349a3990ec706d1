// Kineto's spelling of CUPTI callback names, and the rank identity and trace file name of a capture.
// Built only when the CUDA toolkit's CUPTI headers are available.
#ifdef PTADVISE_TEST_CUPTI_FORMAT

#include <sstream>
#include <string>

#include "cupti_test_support.h"
#include "ptadvise/loader.h"

using namespace cupti_test;  // the record helpers, and `capture` for ptadvise::capture

TEST_CASE("capture names follow Kineto's spelling") {
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memcpy HtoD (Pageable -> Device)");
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_PINNED) == "Memcpy DtoH (Device -> Pinned)");
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memcpy PtoP (Device -> Device)");
  CHECK(capture::memcpy_event_name(99, 42, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) == "Memcpy Unknown (Unknown -> Managed)");
  CHECK(capture::memset_event_name(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memset (Device)");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) == "Stream Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) == "Event Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE) == "Context Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) == "Stream Wait Event");

  CHECK(capture::api_display_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(capture::api_display_name("cudaMemcpyAsync_ptsz_v7000") == "cudaMemcpyAsync");
  CHECK(capture::api_display_name("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(capture::api_display_name("cudaFoo_vector") == "cudaFoo_vector");
  CHECK_FALSE(capture::keep_runtime_call("cudaGetDevice"));
  CHECK_FALSE(capture::keep_runtime_call("cudaGetLastError"));
  CHECK(capture::keep_runtime_call("cudaLaunchKernel"));
  CHECK(capture::keep_runtime_call("cudaStreamSynchronize"));
  CHECK(capture::keep_driver_call("cuLaunchKernel"));
  CHECK(capture::keep_driver_call("cuMemcpyHtoDAsync"));
  CHECK(capture::keep_driver_call("cuStreamSynchronize"));
  CHECK_FALSE(capture::keep_driver_call("cuCtxGetCurrent"));
  CHECK_FALSE(capture::keep_driver_call("cuGetProcAddress"));
  CHECK(capture::starts_flow("cudaLaunchKernel"));
  CHECK(capture::starts_flow("cudaMemcpyAsync"));
  CHECK(capture::starts_flow("cudaStreamSynchronize"));
  CHECK_FALSE(capture::starts_flow("cudaMalloc"));
  CHECK(capture::demangle("_Z6kernelPfi") == "kernel(float*, int)");
  CHECK(capture::demangle("triton_poi_fused_add_0") == "triton_poi_fused_add_0");
  CHECK(capture::demangle("_Znot a mangled name") == "_Znot a mangled name");
  CHECK(capture::demangle(nullptr) == "unknown kernel");
}

TEST_CASE("capture identity: rank variables and the trace file name") {
  std::map<std::string, std::string> env;
  auto lookup = [&env](const char* name) -> const char* {
    auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
  capture::ProcessIdentity identity;
  identity.host = "gpu-node.example";
  identity.pid = 4242;
  capture::read_rank_environment(identity, lookup);
  CHECK_FALSE(identity.rank.has_value());
  CHECK(identity.world_size == 1);
  CHECK(capture::trace_file_name(identity) == "gpu-node.example_4242.pt.trace.json");

  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}};
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 5);
  CHECK(identity.local_rank == 1);
  CHECK(identity.world_size == 16);
  CHECK(capture::trace_file_name(identity) == "gpu-node.example_4242.rank-5.pt.trace.json");

  env = {{"RANK", "2"}, {"OMPI_COMM_WORLD_RANK", "7"}, {"WORLD_SIZE", "4"}};  // torchrun's RANK first
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 2);
  CHECK(identity.world_size == 4);

  env = {{"RANK", "x1"}, {"LOCAL_RANK", "0"}};  // garbage is ignored; one process: local rank is the rank
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 0);

  identity.host = "we/ird host";
  CHECK(capture::trace_file_name(identity) == "we-ird-host_4242.rank-0.pt.trace.json");
}

#endif  // PTADVISE_TEST_CUPTI_FORMAT
