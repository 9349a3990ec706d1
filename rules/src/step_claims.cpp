#include "step_claims.h"

#include <algorithm>

namespace ptadvise {

StepClaims::StepClaims(const Analysis& analysis)
    : analysis_(analysis),
      claimed_ops_(analysis.timeline != nullptr ? analysis.timeline->events.size() : 0, 0),
      gpu_bound_ms_(analysis.gpu_bound_ns_per_step() / 1e6),
      step_ms_(analysis.step_period_ns() / 1e6),
      gpu_left_ms_(gpu_bound_ms_),
      step_left_ms_(step_ms_) {}

StepClaims::Time StepClaims::time_of(const std::vector<EventIndex>& events, double steps) const {
  Time time;
  if (analysis_.timeline == nullptr || steps <= 0) return time;
  const Events& all = analysis_.timeline->events;
  double gpu_ns = 0, host_ns = 0;
  for (EventIndex e : events) {
    if (e >= all.size()) continue;
    if (is_gpu_activity(all.kind[e])) {
      if (!claimed_ops_[e]) gpu_ns += static_cast<double>(all.dur_ns[e]);
    } else {
      host_ns += static_cast<double>(all.dur_ns[e]);
    }
  }
  time.gpu_ms = gpu_ns / steps / 1e6;
  time.host_ms = host_ns / steps / 1e6;
  return time;
}

namespace {

StepClaims::Grant grant_within(double gpu_ms, double other_ms, double gpu_left_ms, double step_left_ms) {
  StepClaims::Grant granted;
  granted.gpu_ms = std::clamp(gpu_ms, 0.0, std::max(0.0, gpu_left_ms));
  granted.total_ms = std::clamp(granted.gpu_ms + std::max(0.0, other_ms), 0.0, std::max(0.0, step_left_ms));
  granted.gpu_ms = std::min(granted.gpu_ms, granted.total_ms);
  return granted;
}

}  // namespace

StepClaims::Grant StepClaims::grant(double gpu_ms, double other_ms) const {
  return grant_within(gpu_ms, other_ms, gpu_left_ms_, step_left_ms_);
}

StepClaims::Grant StepClaims::grant_alone(double gpu_ms, double other_ms) const {
  return grant_within(gpu_ms, other_ms, gpu_bound_ms_, step_ms_);
}

void StepClaims::commit(const std::vector<const std::vector<EventIndex>*>& gpu_events, const Grant& granted) {
  const Events* all = analysis_.timeline != nullptr ? &analysis_.timeline->events : nullptr;
  for (const auto* events : gpu_events) {
    for (EventIndex e : *events) {
      if (all != nullptr && e < all->size() && is_gpu_activity(all->kind[e])) claimed_ops_[e] = 1;
    }
  }
  gpu_left_ms_ -= granted.gpu_ms;
  step_left_ms_ -= granted.total_ms;
}

}  // namespace ptadvise
