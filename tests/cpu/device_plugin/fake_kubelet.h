// The kubelet's side of registration for the device plugin tests: a Registration server on
// <dir>/kubelet.sock that records every RegisterRequest. Stopping it removes kubelet.sock, and, as
// a restarting kubelet does, may clear the plugins' sockets from the directory.
#pragma once

#include <grpcpp/server.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kubelet/deviceplugin/v1beta1/api.grpc.pb.h"

namespace agileos::device_plugin::testing {

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  // Starts serving on `socket_path`; the test fails (ADD_FAILURE) when it cannot.
  explicit FakeKubelet(std::string socket_path);
  ~FakeKubelet() override;

  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* response) override;

  // Waits up to `timeout` until at least `count` requests came; returns every request so far.
  std::vector<v1beta1::RegisterRequest> waitForRegistrations(std::size_t count,
                                                             std::chrono::milliseconds timeout);
  std::size_t registrations();

 private:
  std::string socket_path_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mutex_;
  std::condition_variable registered_;
  std::vector<v1beta1::RegisterRequest> requests_;
};

}  // namespace agileos::device_plugin::testing
