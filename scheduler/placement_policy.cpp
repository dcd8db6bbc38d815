#include "scheduler/placement_policy.h"

namespace agileos::scheduler {

const char* toString(WorkerPhase phase) {
  switch (phase) {
    case WorkerPhase::kStarting:
      return "starting";
    case WorkerPhase::kReady:
      return "ready";
    case WorkerPhase::kRetiring:
      return "retiring";
    case WorkerPhase::kExiting:
      return "exiting";
  }
  return "unknown";
}

}  // namespace agileos::scheduler
