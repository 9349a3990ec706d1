// `ptadvise run`: launching a program with capture enabled and finding the traces it wrote.
#pragma once

#include <string>
#include <vector>

namespace ptadvise {

enum class CaptureBackend { Cupti, Torch };

}  // namespace ptadvise
