// ShmWorkerChannel: the worker's end of one shared-memory call region
// (proto/shm/ring_layout.h): it takes requests off the request ring and puts replies
// on the completion ring.
//
// Everything in the region is untrusted. The channel keeps the geometry and its own
// indices in private memory and never reads them back from the region; it checks
// every index of the client's that it reads (proto/shm/ring_index.h); it copies a slot's header,
// then exactly the payload the header names, to private memory before reading them, and
// bounds every length and offset against the private geometry. Whatever the client
// writes, the outcome is a request, "nothing yet", or a violation: the caller then
// ends the connection. Never undefined behaviour.
//
// Thread-safety: none; one serving thread per channel.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/shm/mapped_region.h"

namespace agileos::worker {

class ShmWorkerChannel {
 public:
  // `region` must outlive the channel.
  explicit ShmWorkerChannel(const shm::MappedRegion& region);

  // True if the client's request index differs from what this side has consumed
  // (a new request, or garbage that takeRequest() will diagnose). For waiting.
  bool requestIndexMoved() const;

  // True if a request is queued and its slot says the client will not wait for it (a launch, an
  // async copy...). A hint read from the client's memory, never checked: it only decides whether
  // a launch is held for the ones behind it (worker/launch_batch.h), never what a request means.
  bool unawaitedRequestQueued() const;

  enum class Take { kEmpty, kRequest, kViolation };
  // Non-blocking. kRequest: *message holds a private copy of the serialized request and
  // *noReply whether the client asked for no completion (shm::kNoReply).
  Take takeRequest(std::uint64_t* callId, std::string* message, bool* noReply);

  enum class Put { kDone, kFull, kViolation };
  // Writes a completion (serializing `reply`, when given, straight into the slot or the
  // reply arena), publishes it and wakes the client. A reply larger than the reply arena
  // is sent as kReplyTooLarge without a message. kFull: no free slot, or the reply needs
  // the arena while the client has not consumed every earlier completion yet.
  Put putCompletion(std::uint64_t callId, shm::CompletionStatus status,
                    const google::protobuf::MessageLite* reply);

  // Why the last kViolation was returned.
  const std::string& violation() const { return violation_; }

 private:
  template <class T>
  T fail(T result, std::string reason) {
    violation_ = std::move(reason);
    return result;
  }

  const shm::MappedRegion& region_;
  const shm::RegionGeometry geometry_;  // private copy: never re-read from the region
  shm::ControlBlock& control_;
  std::uint64_t requestConsumed_ = 0;
  std::uint64_t lastRequestProduced_ = 0;
  std::uint64_t completionProduced_ = 0;
  std::uint64_t lastCompletionConsumed_ = 0;
  std::string violation_;
};

}  // namespace agileos::worker
