// Internal to rules/: claims on the step beyond idle time. GPU ops (kernels, copies, memsets) are claimed
// by the first finding whose saving counts their time; GPU-time savings together stay within what faster
// GPU work can take off a step (Analysis::gpu_bound_ns_per_step); all savings together stay within the
// step period. So the findings of one trace add up to at most one step (docs/ANALYSIS.md, "The step ledger").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise {

class StepClaims {
 public:
  explicit StepClaims(const Analysis& analysis);

  // Summed duration per step (ms) of `events`: GPU ops no earlier finding claimed, and host events.
  struct Time {
    double gpu_ms = 0;
    double host_ms = 0;
  };
  Time time_of(const std::vector<EventIndex>& events, double steps) const;

  // What a finding asking for `gpu_ms` of GPU-time saving and `other_ms` of other saving (idle time from
  // the ledger, host time) may have: the GPU part within the GPU bound left, the whole within what is left
  // of the step.
  struct Grant {
    double gpu_ms = 0;
    double total_ms = 0;
  };
  Grant grant(double gpu_ms, double other_ms) const;
  // The same as if no finding had been granted anything before: what the finding is worth on its own.
  Grant grant_alone(double gpu_ms, double other_ms) const;

  // Records a reported finding's claims: its GPU ops and what it was granted.
  void commit(const std::vector<const std::vector<EventIndex>*>& gpu_events, const Grant& granted);

 private:
  const Analysis& analysis_;
  std::vector<uint8_t> claimed_ops_;  // per event
  double gpu_bound_ms_ = 0;
  double step_ms_ = 0;
  double gpu_left_ms_ = 0;
  double step_left_ms_ = 0;
};

}  // namespace ptadvise
