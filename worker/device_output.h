// DeviceOutputCapture: collects what kernels print with device printf.
//
// The driver writes device printf output to the worker's stdout when a
// synchronizing call flushes the printf FIFO. The worker's own logs go to
// stderr; its stdout is redirected into a pipe, drained continuously by a
// background thread (so a large flush can never block the driver on a full
// pipe) and handed to the client with the next reply, which writes it to the
// application's stdout.
//
// A dedicated worker serves one client, so everything captured is that
// client's. (A worker shared by several clients cannot attribute printf
// output; such a policy must disable device printf or keep one context per client.)
//
// Thread-safety: take() may be called from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace agileos::worker {

class DeviceOutputCapture {
 public:
  // Redirects fd 1. Returns false (and leaves stdout alone) if the pipe cannot be made.
  bool start();
  ~DeviceOutputCapture();

  // Flushes stdio and returns everything captured so far (at most kMaxBuffered
  // bytes are kept between takes; beyond that output is dropped and a marker says so).
  // Until expectOutput() has been called this returns at once with nothing: collecting
  // costs a flush and a read(2) per reply, which programs that never print should not pay.
  std::string take();

  // A module that may print (its image calls vprintf or __assertfail) was loaded: from now
  // on take() collects. Output written before then is kept and handed over later.
  void expectOutput() { expecting_.store(true, std::memory_order_relaxed); }

  // True if a module image may print on the device: it names vprintf or __assertfail (in
  // PTX text and in a cubin's symbol table alike).
  static bool imageMayPrint(const std::string& image);

  static constexpr std::size_t kMaxBuffered = 16u << 20;

 private:
  void drainLoop();
  void readAvailableLocked();

  int readFd_ = -1;
  int stopFd_[2] = {-1, -1};
  std::thread drainer_;
  std::mutex mutex_;
  std::string buffer_;
  bool truncated_ = false;
  std::atomic<bool> expecting_{false};
};

}  // namespace agileos::worker
