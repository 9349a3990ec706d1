// user_source: the first user frame from the python_function tree, `Python parent id`, or `Call stack`.
#include <doctest/doctest.h>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

TEST_CASE("user_source: the innermost user frame of the python_function tree") {
  TraceBuilder trace(Era::Kineto2023);
  trace.python_frame("train.py(10): main", 0, 1000, 1, -1);
  trace.python_frame("torch/nn/modules/module.py(1501): _call_impl", 10, 500, 2, 1);
  trace.python_frame("model.py(25): forward", 20, 400, 3, 2);
  trace.python_frame("/usr/lib/python3/dist-packages/torch/nn/functional.py(100): linear", 30, 300, 4, 3);
  trace.python_frame("<built-in method addmm of type object at 0x7f>", 35, 200, 5, 4);
  trace.cpu_op("aten::linear", 40, 100);
  trace.launch("gemm", 50, 5, 60, 10);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  auto location = analysis.user_source(find_event(timeline, "gemm"));
  REQUIRE(location.has_value());
  CHECK(location->file == "model.py");
  CHECK(location->line == 25);
  CHECK(location->function == "forward");
  // Outside model.py the first user frame is train.py.
  auto outer = analysis.user_source(find_event(timeline, "torch/nn/modules/module.py(1501): _call_impl"));
  REQUIRE(outer.has_value());
  CHECK(outer->file == "train.py");
  CHECK(outer->line == 10);
}

TEST_CASE("user_source: continues through Python parent id when the nesting ends") {
  TraceBuilder trace(Era::Kineto2023);
  trace.python_frame("scripts/train.py(77): step", 0, 5, 10, -1);  // recorded, but does not enclose the op
  trace.python_frame("/opt/venv/lib/python3.11/site-packages/lib.py(5): helper", 100, 50, 11, 10);
  trace.cpu_op("aten::add", 110, 10);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  auto location = analysis.user_source(find_event(timeline, "aten::add"));
  REQUIRE(location.has_value());
  CHECK(location->file == "scripts/train.py");
  CHECK(location->line == 77);
  CHECK(location->function == "step");
}

TEST_CASE("user_source: the older Call stack arg, innermost frame first") {
  TraceBuilder trace(Era::Kineto2021);
  trace.cpu_op("aten::linear", 100, 50,
               "\"Call stack\": \"/usr/lib/python3.8/site-packages/torch/nn/functional.py(1848): linear;\\r\\n"
               "model.py(31): forward;\\r\\ntrain.py(12): step\"");
  trace.cpu_op("aten::addmm", 110, 20, "\"Call stack\": \"\"");
  trace.launch("gemm", 115, 5, 130, 10);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  auto location = analysis.user_source(find_event(timeline, "gemm"));
  REQUIRE(location.has_value());
  CHECK(location->file == "model.py");
  CHECK(location->line == 31);
  CHECK(location->function == "forward");

  TraceBuilder bare(Era::Kineto2023);
  bare.cpu_op("aten::add", 0, 10);
  Timeline no_stacks = bare.load();
  CHECK_FALSE(analyze(no_stacks).user_source(find_event(no_stacks, "aten::add")).has_value());
}

TEST_CASE("python frame parsing and library filtering") {
  auto frame = parse_python_frame("  /home/me/project/train.py(142): <lambda>  ");
  REQUIRE(frame.has_value());
  CHECK(frame->file == "/home/me/project/train.py");
  CHECK(frame->line == 142);
  CHECK(frame->function == "<lambda>");
  auto bare = parse_python_frame("/root/test/slice.py(116)");
  REQUIRE(bare.has_value());
  CHECK(bare->line == 116);
  CHECK(bare->function.empty());
  CHECK_FALSE(parse_python_frame("nn.Module: Linear_0").has_value());
  CHECK_FALSE(parse_python_frame("<built-in method item of Tensor object at 0x7f>").has_value());
  CHECK_FALSE(parse_python_frame("f.py(x1): g").has_value());
  CHECK(is_library_frame("torch/nn/modules/module.py"));
  CHECK(is_library_frame("/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py"));
  CHECK(is_library_frame("/usr/lib/python3.10/threading.py"));
  CHECK(is_library_frame("/venv/lib/python3.11/site-packages/transformers/models/bert.py"));
  CHECK(is_library_frame("<frozen importlib._bootstrap>"));
  CHECK_FALSE(is_library_frame("train.py"));
  CHECK_FALSE(is_library_frame("/home/me/torchvision_experiments/model.py"));
}
