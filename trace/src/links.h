// Internal to trace/: the link pass run at the end of loading.
#pragma once

#include "ptadvise/timeline.h"

namespace ptadvise::detail {

// Fills Timeline::track_events (per track, sorted by ts asc, dur desc), Events::parent (innermost
// enclosing event on the same CPU track, tolerating ±1 µs rounding) and Events::launch (GPU op <->
// runtime/driver call by correlation id). Linear in events after the per-track sort. With `threads` > 1 the
// tracks and the launches are linked on that many threads.
void link_timeline(Timeline& timeline, unsigned threads = 1);

// Gives every device with GPU activity a DeviceInfo, its vendor, and (NVIDIA, no compute capability in the
// trace) the architecture its library kernels were built for (device_inference.cpp). Run after linking.
void infer_devices(Timeline& timeline);

}  // namespace ptadvise::detail
