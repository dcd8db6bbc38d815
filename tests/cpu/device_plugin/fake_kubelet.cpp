#include "tests/cpu/device_plugin/fake_kubelet.h"

#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace agileos::device_plugin::testing {

FakeKubelet::FakeKubelet(std::string socket_path) : socket_path_(std::move(socket_path)) {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || bound == 0) ADD_FAILURE() << "the fake kubelet cannot listen on " << socket_path_;
}

FakeKubelet::~FakeKubelet() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
  }
  ::unlink(socket_path_.c_str());
}

grpc::Status FakeKubelet::Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                                   v1beta1::Empty*) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(*request);
  }
  registered_.notify_all();
  return grpc::Status::OK;
}

std::vector<v1beta1::RegisterRequest> FakeKubelet::waitForRegistrations(std::size_t count,
                                                                        std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  registered_.wait_for(lock, timeout, [&] { return requests_.size() >= count; });
  return requests_;
}

std::size_t FakeKubelet::registrations() {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

}  // namespace agileos::device_plugin::testing
