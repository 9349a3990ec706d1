// Feeds arbitrary bytes (plain or gzip) to the loader and reads every args value back through the
// accessors. Any crash, sanitizer report, hang or leak is a bug; LoadErrors are expected.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptadvise/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto result = ptadvise::load_trace_bytes(bytes, "fuzz.json");
  auto* timeline = std::get_if<ptadvise::Timeline>(&result);
  if (timeline == nullptr) return 0;
  const auto& events = timeline->events;
  for (ptadvise::EventIndex i = 0; i < events.size() && i < 64; ++i) {
    (void)timeline->name(i);
    (void)timeline->args_json(i);
    for (std::string_view key : {"correlation", "External id", "bytes", "device", "grid", "name"}) {
      (void)timeline->arg_int(i, key);
      (void)timeline->arg_double(i, key);
      (void)timeline->arg_string(i, key);
    }
    if (events.track[i] >= timeline->tracks.size()) __builtin_trap();
    if (events.dur_ns[i] < 0 || events.ts_ns[i] < 0) __builtin_trap();
    if (events.args_offset[i] + events.args_length[i] > timeline->buffer_size) __builtin_trap();
  }
  for (const auto& device : timeline->devices) (void)timeline->device(device.id);
  return 0;
}
