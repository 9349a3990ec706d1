#include "ptadvise/capture.h"
