// An environment variable set for one test's scope, and removed at its end.
#pragma once

#include <cstdlib>
#include <string>

namespace ptadvise::testing {

struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* key, const char* value) : name(key) { setenv(key, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace ptadvise::testing
