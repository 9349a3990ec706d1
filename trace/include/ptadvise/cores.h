// The cores this process may run on, for sizing thread pools.
#pragma once

namespace ptadvise {

// The cores this process may run on (taskset and cgroup cpusets narrow them), not the machine's; at least 1.
unsigned usable_cores();

}  // namespace ptadvise
