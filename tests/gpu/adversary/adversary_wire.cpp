// adversary_wire: a hostile client that speaks the wire protocol directly,
// without the shim, so nothing on the client side filters what it sends.
//
// It opens a Session with agileosd, takes its Assignment, and then calls the
// assigned worker with: no token, wrong tokens, an empty CallRequest, forged
// stream/event/function/module tokens, sizes and offsets that overflow or run
// past an allocation, data whose length disagrees with the declared sizes,
// pointers into the protected ranges, random or truncated fatbins, launches
// whose parameter blob has the wrong size, and bytes that are not a protobuf at
// all (through grpc::GenericStub). Every one must be refused: authentication
// failures with UNAUTHENTICATED or PERMISSION_DENIED, the rest with a CUDA
// error in the reply (or a non-OK status). After every case a valid
// mem_alloc / htod / dtoh / mem_free round trip on the same session must still
// work. A second Session then checks that one client cannot use or free what
// another holds, and finally that a token stops working once its session ends.
//
// Usage: adversary_wire --socket PATH --fatbin-from EXECUTABLE [--fake-gpu]
//   PATH        the daemon's socket (agileosd.sock)
//   EXECUTABLE  a CUDA program containing the extern "C" kernel
//               agileos_adversary_increment(unsigned*, unsigned) (adversary_api)
//   --fake-gpu  the workers have a fake GPU backend (CPU CI): kernels do not run there,
//               so the positive launch control checks acceptance, not the kernel's effect
// Output: a table "case | expected | got | PASS/FAIL" and a closing line
// "adversary_wire: N passed, M failed". Exit status 0 only if every case passed.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "agileos/v1/client_api.grpc.pb.h"
#include "tests/gpu/adversary/fatbin_section.h"

namespace {

namespace v1 = ::agileos::v1;
using agileos::adversary::Bytes;

// The session token is binary, so it travels as binary metadata (the "-bin" suffix).
constexpr const char* kTokenMetadataKey = "x-agileos-session-bin";
constexpr const char* kCallMethod = "/agileos.v1.Worker/Call";
constexpr const char* kKernelName = "agileos_adversary_increment";
constexpr auto kCallDeadline = std::chrono::seconds(20);

constexpr std::uint64_t kIoAperture = 0xF0000000000ull;
constexpr std::uint64_t kModuleRange = 0xF1000000000ull;
constexpr std::uint64_t kUserRange = 0xF8000000000ull;
constexpr std::uint64_t kForgedToken = 0x5eed5eed12345678ull;

// The cudaError_t values the cases expect (runtime API numbering, as on the wire).
constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kMemoryAllocation = 2;
constexpr int kInvalidResourceHandle = 400;

// ------------------------------------------------------------------ calls and outcomes

struct CallResult {
  grpc::Status status;
  v1::CallReply reply;

  bool transportOk() const { return status.ok(); }
  int error() const { return reply.error(); }
  bool refused() const { return !status.ok() || reply.error() != kSuccess; }
  bool authRefused() const {
    return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
           status.error_code() == grpc::StatusCode::PERMISSION_DENIED;
  }
  std::string describe() const {
    if (!status.ok()) return "status " + std::to_string(status.error_code()) + " " + status.error_message();
    return "error " + std::to_string(reply.error()) +
           (reply.error_detail().empty() ? "" : " (" + reply.error_detail() + ")");
  }
};

// What a case requires of the reply.
struct Expectation {
  enum class Kind { kAuthRefusal, kError, kAnyRefusal, kSuccess } kind;
  int error = 0;

  static Expectation auth() { return {Kind::kAuthRefusal}; }
  static Expectation cuda(int error) { return {Kind::kError, error}; }
  static Expectation anyRefusal() { return {Kind::kAnyRefusal}; }
  static Expectation success() { return {Kind::kSuccess}; }

  bool met(const CallResult& r) const {
    switch (kind) {
      case Kind::kAuthRefusal:
        return r.authRefused();
      case Kind::kError:
        return r.transportOk() && r.error() == error;
      case Kind::kAnyRefusal:
        return r.refused() && r.status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;
      case Kind::kSuccess:
        return r.transportOk() && r.error() == kSuccess;
    }
    return false;
  }
  std::string describe() const {
    switch (kind) {
      case Kind::kAuthRefusal:
        return "UNAUTHENTICATED/PERMISSION_DENIED";
      case Kind::kError:
        return "error " + std::to_string(error);
      case Kind::kAnyRefusal:
        return "any refusal";
      case Kind::kSuccess:
        return "success";
    }
    return "?";
  }
};

// A channel to one worker, with typed and raw (non-protobuf) calls.
class WorkerClient {
 public:
  explicit WorkerClient(const std::string& endpoint)
      : channel_(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials())),
        stub_(v1::Worker::NewStub(channel_)),
        generic_(channel_) {}

  CallResult call(const v1::CallRequest& request, const std::optional<std::string>& token,
                  const char* tokenKey = kTokenMetadataKey) {
    grpc::ClientContext context;
    prepare(context, token, tokenKey);
    CallResult result;
    result.status = stub_->Call(&context, request, &result.reply);
    return result;
  }

  // Sends `bytes` as the request body of `method`, whatever they are.
  CallResult raw(const std::string& method, const std::string& bytes,
                 const std::optional<std::string>& token) {
    grpc::ClientContext context;
    prepare(context, token);
    grpc::CompletionQueue queue;
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    CallResult result;
    auto call = generic_.PrepareUnaryCall(&context, method, request, &queue);
    call->StartCall();
    call->Finish(&response, &result.status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    queue.Next(&tag, &ok);
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
    if (result.status.ok()) {
      std::vector<grpc::Slice> slices;
      if (response.Dump(&slices).ok()) {
        std::string body;
        for (const grpc::Slice& s : slices) body.append(reinterpret_cast<const char*>(s.begin()), s.size());
        if (!result.reply.ParseFromString(body))
          result.status = grpc::Status(grpc::StatusCode::DATA_LOSS, "unparsable reply");
      }
    }
    return result;
  }

 private:
  static void prepare(grpc::ClientContext& context, const std::optional<std::string>& token,
                      const char* tokenKey = kTokenMetadataKey) {
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (token) context.AddMetadata(tokenKey, *token);
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  grpc::GenericStub generic_;
};

// One client's Session stream with the daemon; the session lasts while this object is open.
class Session {
 public:
  explicit Session(const std::string& daemonTarget)
      : stub_(v1::Daemon::NewStub(grpc::CreateChannel(daemonTarget, grpc::InsecureChannelCredentials()))) {}

  ~Session() { close(); }

  // Sends Hello and waits for the Assignment. Returns an empty string or the reason it failed.
  std::string open(const std::string& program) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(9));
    stream_ = stub_->Session(&context_);
    v1::SessionUp up;
    up.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
    up.mutable_hello()->set_program(program);
    up.mutable_hello()->set_pid(0);
    if (!stream_->Write(up)) return "the daemon closed the session stream before Hello";
    v1::SessionDown down;
    if (!stream_->Read(&down)) return "the daemon closed the session stream without an answer";
    if (down.has_refusal()) return "refused: " + down.refusal().message();
    if (!down.has_assignment()) return "first message is not an Assignment";
    assignment_ = down.assignment();
    open_ = true;
    return "";
  }

  void close() {
    if (!open_) return;
    open_ = false;
    stream_->WritesDone();
    context_.TryCancel();
    stream_->Finish();
  }

  const v1::Assignment& assignment() const { return assignment_; }
  std::string token() const { return assignment_.session_token(); }

 private:
  std::unique_ptr<v1::Daemon::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionUp, v1::SessionDown>> stream_;
  v1::Assignment assignment_;
  bool open_ = false;
};

// ------------------------------------------------------------------ request builders

v1::CallRequest memAlloc(std::uint64_t size) {
  v1::CallRequest r;
  r.mutable_mem_alloc()->set_size(size);
  return r;
}
v1::CallRequest memFree(std::uint64_t dptr) {
  v1::CallRequest r;
  r.mutable_mem_free()->set_dptr(dptr);
  return r;
}
v1::CallRequest htod(std::uint64_t dst, std::uint64_t total, std::uint64_t offset, std::string data,
                     std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_htod();
  m->set_dst(dst);
  m->set_total_size(total);
  m->set_offset(offset);
  m->set_data(std::move(data));
  m->set_stream(stream);
  m->set_async(async);
  return r;
}
v1::CallRequest dtoh(std::uint64_t src, std::uint64_t total, std::uint64_t offset, std::uint64_t size,
                     std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_dtoh();
  m->set_src(src);
  m->set_total_size(total);
  m->set_offset(offset);
  m->set_size(size);
  m->set_stream(stream);
  m->set_async(async);
  return r;
}
v1::CallRequest dtod(std::uint64_t dst, std::uint64_t src, std::uint64_t size, std::uint64_t stream = 0) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_dtod();
  m->set_dst(dst);
  m->set_src(src);
  m->set_size(size);
  m->set_stream(stream);
  return r;
}
v1::CallRequest memsetRequest(std::uint64_t dst, std::uint64_t size, std::uint64_t stream = 0) {
  v1::CallRequest r;
  auto* m = r.mutable_memset();
  m->set_dst(dst);
  m->set_value(0xAB);
  m->set_size(size);
  m->set_stream(stream);
  return r;
}
v1::CallRequest moduleLoad(const Bytes& fatbin, const std::vector<std::string>& functions) {
  v1::CallRequest r;
  auto* m = r.mutable_module_load();
  m->set_fatbin(std::string(fatbin.begin(), fatbin.end()));
  for (const std::string& f : functions) m->add_function_names(f);
  return r;
}
v1::CallRequest launch(std::uint64_t function, std::string params, unsigned grid = 1, unsigned block = 32,
                       std::uint64_t stream = 0, unsigned shared = 0, unsigned gridY = 1) {
  v1::CallRequest r;
  auto* m = r.mutable_launch_kernel();
  m->set_function(function);
  m->mutable_grid()->set_x(grid);
  m->mutable_grid()->set_y(gridY);
  m->mutable_grid()->set_z(1);
  m->mutable_block()->set_x(block);
  m->mutable_block()->set_y(1);
  m->mutable_block()->set_z(1);
  m->set_shared_mem_bytes(shared);
  m->set_stream(stream);
  m->set_params(std::move(params));
  return r;
}

// The parameter blob of agileos_adversary_increment(unsigned* data, unsigned n): 8 + 4 bytes.
// A call of a trusted library adapter (AdapterCall); `args` are set by `fill`.
v1::CallRequest adapterCall(const std::string& library, const std::string& operation,
                            const std::function<void(v1::AdapterCall*)>& fill = {}) {
  v1::CallRequest request;
  auto* call = request.mutable_adapter_call();
  call->set_library(library);
  call->set_operation(operation);
  if (fill) fill(call);
  return request;
}

// cufft exec of `plan` (C2C forward) from `in` to `out`.
v1::CallRequest cufftExec(std::uint64_t plan, std::uint64_t in, std::uint64_t out) {
  return adapterCall("cufft", "exec", [&](v1::AdapterCall* call) {
    call->add_args()->set_handle(plan);
    call->add_args()->set_integer(0);  // C2C
    call->add_args()->set_device_pointer(in);
    call->add_args()->set_device_pointer(out);
    call->add_args()->set_integer(-1);  // CUFFT_FORWARD
  });
}

std::string incrementParams(std::uint64_t data, std::uint32_t n) {
  std::string blob(12, '\0');
  std::memcpy(blob.data(), &data, 8);
  std::memcpy(blob.data() + 8, &n, 4);
  return blob;
}

std::string pattern(std::size_t size, unsigned seed) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 2654435761u + seed) >> 13);
  return s;
}

// ------------------------------------------------------------------ the test

class WireAdversary {
 public:
  WireAdversary(std::string socketPath, Bytes fatbin, bool fakeGpu)
      : daemonTarget_("unix:" + socketPath), fatbin_(std::move(fatbin)), fakeGpu_(fakeGpu) {}

  int run() {
    std::printf("%-66s | %-34s | %-40s | %s\n", "case", "expected", "got", "result");
    Session first(daemonTarget_);
    const std::string openError = first.open("adversary_wire");
    if (!openError.empty()) {
      std::printf("adversary_wire: cannot open a session: %s\n", openError.c_str());
      return 1;
    }
    token_ = first.token();
    worker_ = std::make_unique<WorkerClient>(first.assignment().worker_endpoint());
    std::fprintf(stderr, "assigned %s, client %llu\n", first.assignment().worker_endpoint().c_str(),
                 static_cast<unsigned long long>(first.assignment().client_id()));
    const std::string before = roundTrip();
    if (!before.empty()) {
      std::printf("adversary_wire: the round trip fails before any attack: %s\n", before.c_str());
      return 1;
    }
    setUpResources();
    authenticationCases();
    emptyAndGarbageCases();
    forgedTokenCases();
    rangeCases();
    moduleCases();
    crossSessionCases(first);
    staleTokenCase(first);
    std::printf("adversary_wire: %d passed, %d failed\n", passed_, failed_);
    return failed_ == 0 ? 0 : 1;
  }

 private:
  CallResult call(const v1::CallRequest& request) { return worker_->call(request, token_); }

  // A complete valid use of the session. Returns an empty string or what went wrong.
  std::string roundTrip() {
    const std::string data = pattern(65536, 7);
    const CallResult alloc = call(memAlloc(data.size()));
    if (alloc.refused() || !alloc.reply.has_device_pointer()) return "mem_alloc: " + alloc.describe();
    const std::uint64_t p = alloc.reply.device_pointer().dptr();
    const CallResult put = call(htod(p, data.size(), 0, data));
    if (put.refused()) return "htod: " + put.describe();
    const CallResult get = call(dtoh(p, data.size(), 0, data.size()));
    if (get.refused()) return "dtoh: " + get.describe();
    if (get.reply.host_data().data() != data) return "dtoh returned different bytes";
    const CallResult release = call(memFree(p));
    if (release.refused()) return "mem_free: " + release.describe();
    return "";
  }

  void record(const std::string& name, const Expectation& expected, const CallResult& got) {
    bool ok = expected.met(got);
    std::string gotText = got.describe();
    const std::string afterwards = roundTrip();
    if (!afterwards.empty()) {
      ok = false;
      gotText += "; round trip after it failed: " + afterwards;
    }
    if (gotText.size() > 120) gotText = gotText.substr(0, 117) + "...";
    std::printf("%-66s | %-34s | %-40s | %s\n", name.c_str(), expected.describe().c_str(), gotText.c_str(),
                ok ? "PASS" : "FAIL");
    std::fflush(stdout);
    (ok ? passed_ : failed_) += 1;
  }

  void check(const std::string& name, const Expectation& expected, const v1::CallRequest& request) {
    record(name, expected, call(request));
  }

  // A row for a property checked by several calls; `failure` empty means PASS.
  void property(const std::string& name, const std::string& failure) {
    std::printf("%-66s | %-34s | %-40s | %s\n", name.c_str(), "holds",
                failure.empty() ? "holds" : failure.c_str(), failure.empty() ? "PASS" : "FAIL");
    std::fflush(stdout);
    (failure.empty() ? passed_ : failed_) += 1;
  }

  std::uint64_t tokenOf(const CallResult& r) const {
    return r.reply.has_token() ? r.reply.token().token() : 0;
  }

  void setUpResources() {
    property("set-up: the session token has at least 16 bytes",
             token_.size() >= 16 ? "" : "only " + std::to_string(token_.size()) + " bytes");
    const CallResult a = call(memAlloc(4096));
    allocation_ = a.reply.has_device_pointer() ? a.reply.device_pointer().dptr() : 0;
    call(htod(allocation_, 4096, 0, std::string(4096, '\x11')));
    v1::CallRequest streamCreate;
    streamCreate.mutable_stream_create();
    stream_ = tokenOf(call(streamCreate));
    v1::CallRequest eventCreate;
    eventCreate.mutable_event_create();
    event_ = tokenOf(call(eventCreate));
    if (!fatbin_.empty()) {
      const CallResult loaded = call(moduleLoad(fatbin_, {kKernelName}));
      if (!loaded.refused() && loaded.reply.has_module_loaded() &&
          loaded.reply.module_loaded().functions_size() == 1) {
        module_ = loaded.reply.module_loaded().module();
        const v1::FunctionInfo& info = loaded.reply.module_loaded().functions(0);
        function_ = info.error() == 0 ? info.token() : 0;
        paramBufferSize_ = info.param_buffer_size();
      }
    }
    property("set-up: allocation, stream, event, module and kernel obtained",
             allocation_ && stream_ && event_ && module_ && function_
                 ? std::string()
                 : "missing: " + std::string(allocation_ ? "" : "allocation ") + (stream_ ? "" : "stream ") +
                       (event_ ? "" : "event ") + (module_ ? "" : "module ") + (function_ ? "" : "function"));
    // A cuFFT plan of 256 C2C points (a worker without the adapter, e.g. the fake one, has none).
    const CallResult created = call(adapterCall("cufft", "create"));
    if (!created.refused() && created.reply.adapter_reply().results_size() == 1) {
      const std::uint64_t plan = created.reply.adapter_reply().results(0).handle();
      const CallResult made = call(adapterCall("cufft", "make_plan", [&](v1::AdapterCall* c) {
        c->add_args()->set_handle(plan);
        c->add_args()->set_integer(1);  // ShapeVariant::kOne
        c->add_args()->mutable_integers()->add_values(256);
        c->add_args();  // no inembed
        c->add_args()->set_integer(1);
        c->add_args()->set_integer(0);
        c->add_args();  // no onembed
        c->add_args()->set_integer(1);
        c->add_args()->set_integer(0);
        c->add_args()->set_integer(0x29);  // CUFFT_C2C
        c->add_args()->set_integer(1);
      }));
      if (!made.refused()) plan_ = plan;
    }
    std::fprintf(stderr, "cuFFT plan for the adapter cases: %s\n",
                 plan_ != 0 ? "made" : "none (no cuFFT adapter)");
    property("set-up: kernel parameter buffer is 12 bytes",
             paramBufferSize_ == 12 ? "" : "reported " + std::to_string(paramBufferSize_));
  }

  void authenticationCases() {
    const v1::CallRequest request = memAlloc(4096);
    std::string flipped = token_;
    if (!flipped.empty()) flipped.back() = static_cast<char>(flipped.back() ^ 0x01);
    std::mt19937_64 random(12345);
    std::string randomToken;
    for (std::size_t i = 0; i < std::max<std::size_t>(token_.size(), 32); ++i) {
      randomToken += static_cast<char>(random() & 0xFF);
    }
    const std::vector<std::pair<std::string, std::optional<std::string>>> tokens = {
        {"no token", std::nullopt},
        {"empty token", std::string()},
        {"random token", randomToken},
        {"real token with one bit of its last byte flipped", flipped},
        {"real token plus one byte", token_ + "0"},
        {"real token minus its last byte", token_.substr(0, token_.empty() ? 0 : token_.size() - 1)},
        {"real token twice", token_ + token_},
    };
    for (const auto& [what, token] : tokens) {
      record("call with " + what, Expectation::auth(), worker_->call(request, token));
    }
    // The token, hex-encoded, under the text key without "-bin": not the token.
    std::string hex;
    for (unsigned char c : token_) {
      hex += "0123456789abcdef"[c >> 4];
      hex += "0123456789abcdef"[c & 0xF];
    }
    record("call with the token in hex under \"x-agileos-session\"", Expectation::auth(),
           worker_->call(request, hex, "x-agileos-session"));
    // Without a token nothing may be served; the refusal may come before or after parsing.
    record("raw garbage with no token", Expectation::anyRefusal(),
           worker_->raw(kCallMethod, std::string(64, '\xFF'), std::nullopt));
  }

  void emptyAndGarbageCases() {
    check("empty CallRequest (no op set)", Expectation::anyRefusal(), v1::CallRequest());
    const std::vector<std::pair<std::string, std::string>> garbage = {
        {"64 bytes of 0xFF", std::string(64, '\xFF')},
        {"a truncated length prefix", std::string("\x52\x80", 2)},
        {"a mem_alloc request cut short", memAlloc(4096).SerializeAsString().substr(0, 3)},
        {"a field with wire type 7", std::string("\x0F\x01\x02\x03", 4)},
        {"1 MiB of pseudo-random bytes", pattern(1 << 20, 99)},
        {"empty bytes (an empty CallRequest)", std::string()},
    };
    for (const auto& [what, bytes] : garbage) {
      record("raw request: " + what, Expectation::anyRefusal(), worker_->raw(kCallMethod, bytes, token_));
    }
    record("raw request to an unknown method", Expectation::anyRefusal(),
           worker_->raw("/agileos.v1.Worker/NoSuchMethod", memAlloc(16).SerializeAsString(), token_));
  }

  void forgedTokenCases() {
    const auto bad = Expectation::cuda(kInvalidResourceHandle);
    const std::uint64_t f = kForgedToken;
    check("cufft exec(forged plan)", Expectation::anyRefusal(), cufftExec(f, allocation_, allocation_));
    check("cufft exec(a stream token as the plan)", Expectation::anyRefusal(),
          cufftExec(stream_, allocation_, allocation_));
    check("cufft exec(plan, the I/O aperture as input)", Expectation::anyRefusal(),
          cufftExec(plan_, kIoAperture, allocation_));
    check("cufft exec in place, 8 bytes short of the plan's 2 KiB", Expectation::anyRefusal(),
          cufftExec(plan_, allocation_ + 2048 + 8, allocation_ + 2048 + 8));
    check("cufft exec with arguments of the wrong kinds", Expectation::anyRefusal(),
          adapterCall("cufft", "exec", [&](v1::AdapterCall* c) {
            c->add_args()->set_integer(static_cast<std::int64_t>(plan_));
            c->add_args()->set_integer(0);
            c->add_args()->set_integer(static_cast<std::int64_t>(allocation_));
            c->add_args()->set_integer(static_cast<std::int64_t>(allocation_));
            c->add_args()->set_integer(-1);
          }));
    check("cufft exec with a missing argument", Expectation::anyRefusal(),
          adapterCall("cufft", "exec", [&](v1::AdapterCall* c) { c->add_args()->set_handle(plan_); }));
    check("an undeclared cufft operation (xt_set_callback)", Expectation::anyRefusal(),
          adapterCall("cufft", "xt_set_callback"));
    check("a library no worker hosts (cublas)", Expectation::anyRefusal(), adapterCall("cublas", "create"));
    // NVRTC would read the file and quote it in its log: the compilation must fail before it runs
    // (a failed compilation, status NVRTC_ERROR_COMPILATION = 6, with AgileOS's reason as the log),
    // or be refused outright where no NVRTC adapter is hosted.
    const CallResult compiled = call(adapterCall("nvrtc", "compile", [&](v1::AdapterCall* c) {
      c->add_args()->set_text("#include \"/etc/hostname\"\n");
      c->add_args()->set_text("x.cu");
      for (int i = 0; i < 4; ++i) c->add_args()->mutable_texts();
    }));
    const auto& result = compiled.reply.adapter_reply();
    property("nvrtc compile including /etc/hostname: refused before NVRTC reads it",
             compiled.refused() ? ""
             : result.status() == 6 && result.results_size() > 0 &&
                     result.results(0).text().starts_with("AgileOS:")
                 ? ""
                 : "status " + std::to_string(result.status()));
    v1::CallRequest r;
    r.mutable_stream_synchronize()->set_stream(f);
    check("stream_synchronize(forged stream)", bad, r);
    r.Clear();
    r.mutable_stream_synchronize()->set_stream(3);
    check("stream_synchronize(stream 3)", bad, r);
    r.Clear();
    r.mutable_stream_query()->set_stream(f);
    check("stream_query(forged stream)", bad, r);
    r.Clear();
    r.mutable_stream_destroy()->set_stream(f);
    check("stream_destroy(forged stream)", bad, r);
    r.Clear();
    r.mutable_stream_destroy()->set_stream(0);
    check("stream_destroy(legacy default stream 0)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_stream_wait_event()->set_stream(0);
    r.mutable_stream_wait_event()->set_event(f);
    check("stream_wait_event(0, forged event)", bad, r);
    r.Clear();
    r.mutable_stream_wait_event()->set_stream(f);
    r.mutable_stream_wait_event()->set_event(event_);
    check("stream_wait_event(forged stream, event)", bad, r);
    r.Clear();
    r.mutable_event_record()->set_event(f);
    check("event_record(forged event)", bad, r);
    r.Clear();
    r.mutable_event_record()->set_event(event_);
    r.mutable_event_record()->set_stream(f);
    check("event_record(event, forged stream)", bad, r);
    r.Clear();
    r.mutable_event_record()->set_event(stream_);  // a stream token used as an event
    check("event_record(a stream token as the event)", bad, r);
    r.Clear();
    r.mutable_event_synchronize()->set_event(f);
    check("event_synchronize(forged event)", bad, r);
    r.Clear();
    r.mutable_event_query()->set_event(f);
    check("event_query(forged event)", bad, r);
    r.Clear();
    r.mutable_event_elapsed_time()->set_start(event_);
    r.mutable_event_elapsed_time()->set_end(f);
    check("event_elapsed_time(event, forged event)", bad, r);
    r.Clear();
    r.mutable_event_destroy()->set_event(f);
    check("event_destroy(forged event)", bad, r);
    check("memcpy_htod async on a forged stream", bad,
          htod(allocation_, 16, 0, std::string(16, 'x'), f, true));
    check("memcpy_dtoh async on a forged stream", bad, dtoh(allocation_, 16, 0, 16, f, true));
    check("memcpy_dtod on a forged stream", bad, dtod(allocation_, allocation_ + 64, 16, f));
    check("memset on a forged stream", bad, memsetRequest(allocation_, 16, f));
    check("launch_kernel(forged function)", Expectation::anyRefusal(),
          launch(f, incrementParams(allocation_, 32)));
    check("launch_kernel(a stream token as the function)", Expectation::anyRefusal(),
          launch(stream_, incrementParams(allocation_, 32)));
    check("launch_kernel(function, forged stream)", bad,
          launch(function_, incrementParams(allocation_, 32), 1, 32, f));
    r.Clear();
    r.mutable_module_unload()->set_module(f);
    check("module_unload(forged module)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_func_get_attributes()->set_function(f);
    check("func_get_attributes(forged function)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_func_set_attribute()->set_function(f);
    r.mutable_func_set_attribute()->set_attribute(8);  // cudaFuncAttributeMaxDynamicSharedMemorySize
    r.mutable_func_set_attribute()->set_value(1024);
    check("func_set_attribute(forged function)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_func_set_cache_config()->set_function(f);
    check("func_set_cache_config(forged function)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_occupancy_max_active_blocks()->set_function(f);
    r.mutable_occupancy_max_active_blocks()->set_block_size(128);
    check("occupancy_max_active_blocks(forged function)", Expectation::anyRefusal(), r);
  }

  void rangeCases() {
    const auto bad = Expectation::cuda(kInvalidValue);
    const std::uint64_t a = allocation_;
    const std::string sixteen(16, 'x');
    check("htod total_size 2^64-1", bad, htod(a, ~0ull, 0, sixteen));
    check("htod total_size 2^63", bad, htod(a, 1ull << 63, 0, sixteen));
    check("htod offset 2^64-8 (offset+data wraps)", bad, htod(a, 16, ~0ull - 7, sixteen));
    check("htod offset+data exceeds total_size", bad, htod(a, 16, 8, sixteen));
    check("htod data longer than total_size", bad, htod(a, 8, 0, sixteen));
    check("htod 4097 bytes into 4096", bad, htod(a, 4097, 0, std::string(4097, 'y')));
    check("htod at offset 4090 of 4096, 16 bytes", bad, htod(a + 4090, 16, 0, sixteen));
    check("htod to dst 2^64-8 (wraps)", bad, htod(~0ull - 7, 16, 0, sixteen));
    check("htod into the I/O aperture", bad, htod(kIoAperture, 16, 0, sixteen));
    check("htod into the module range", bad, htod(kModuleRange + 0x1000, 16, 0, sixteen));
    check("htod into unallocated user range", bad, htod(kUserRange + (512ull << 30), 16, 0, sixteen));
    check("htod to address 0", bad, htod(0, 16, 0, sixteen));
    check("dtoh size 8192 of a 4096 allocation", bad, dtoh(a, 4096, 0, 8192));
    check("dtoh size 2^62 (no 4 EiB buffer, please)", bad, dtoh(a, 4096, 0, 1ull << 62));
    check("dtoh total_size 2^63", bad, dtoh(a, 1ull << 63, 0, 16));
    check("dtoh offset 2^64-1", bad, dtoh(a, 4096, ~0ull, 2));
    check("dtoh offset 4090 size 16", bad, dtoh(a, 4096, 4090, 16));
    check("dtoh from the module range", bad, dtoh(kModuleRange, 16, 0, 16));
    check("dtoh from the I/O aperture", bad, dtoh(kIoAperture, 16, 0, 16));
    check("dtod 4096 bytes from offset 1", bad, dtod(a, a + 1, 4096));
    check("dtod size 2^64-1", bad, dtod(a, a, ~0ull));
    check("dtod from the I/O aperture", bad, dtod(a, kIoAperture, 16));
    check("dtod into the module range", bad, dtod(kModuleRange, a, 16));
    check("memset 4097 bytes", bad, memsetRequest(a, 4097));
    check("memset size 2^64-1", bad, memsetRequest(a, ~0ull));
    check("memset 1 byte at offset 4096", bad, memsetRequest(a + 4096, 1));
    check("memset the module range", bad, memsetRequest(kModuleRange, 16));
    check("mem_free(interior pointer)", bad, memFree(a + 8));
    check("mem_free(module range)", bad, memFree(kModuleRange));
    check("mem_free(I/O aperture)", bad, memFree(kIoAperture));
    check("mem_free(0xdead)", bad, memFree(0xdead));
    check("mem_alloc 2^62", Expectation::cuda(kMemoryAllocation), memAlloc(1ull << 62));
    check("mem_alloc 2^64-1", Expectation::cuda(kMemoryAllocation), memAlloc(~0ull));
    v1::CallRequest r;
    r.mutable_device_set_limit()->set_limit(99);
    r.mutable_device_set_limit()->set_value(1);
    check("device_set_limit(limit 99)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_event_create()->set_flags(0xFFFFFFFFu);
    check("event_create(flags 0xFFFFFFFF)", Expectation::anyRefusal(), r);
    r.Clear();
    r.mutable_stream_create()->set_flags(0xFFFFu);
    check("stream_create(flags 0xFFFF)", Expectation::anyRefusal(), r);

    const CallResult content = call(dtoh(a, 4096, 0, 4096));
    property("the 4096-byte allocation is unchanged by all of the above",
             content.refused()                                               ? "dtoh: " + content.describe()
             : content.reply.host_data().data() == std::string(4096, '\x11') ? ""
                                                                             : "its bytes changed");
  }

  void moduleCases() {
    const auto any = Expectation::anyRefusal();
    check("module_load(4 KiB of pseudo-random bytes)", any, moduleLoad(Bytes(4096, 0x5A), {kKernelName}));
    Bytes noise(4096);
    for (std::size_t i = 0; i < noise.size(); ++i)
      noise[i] = static_cast<unsigned char>((i * 131u) ^ (i >> 4));
    check("module_load(4 KiB of noise)", any, moduleLoad(noise, {kKernelName}));
    check("module_load(empty fatbin)", any, moduleLoad(Bytes(), {kKernelName}));
    check("module_load(8 MiB of zeros)", any, moduleLoad(Bytes(8u << 20, 0), {kKernelName}));
    if (!fatbin_.empty()) {
      Bytes cut(fatbin_.begin(), fatbin_.begin() + static_cast<std::ptrdiff_t>(fatbin_.size() / 2));
      check("module_load(real fatbin cut in half, header unchanged)", any, moduleLoad(cut, {kKernelName}));
      Bytes shrunk = cut;
      const std::uint64_t half = cut.size() - sizeof(agileos::adversary::FatbinContainerHeader);
      std::memcpy(shrunk.data() + 8, &half, sizeof half);
      check("module_load(real fatbin cut in half, header adjusted)", any, moduleLoad(shrunk, {kKernelName}));
      Bytes header(fatbin_.begin(), fatbin_.begin() + 16);
      const std::uint64_t huge = 1ull << 40;
      std::memcpy(header.data() + 8, &huge, sizeof huge);
      check("module_load(header claiming 1 TiB)", any, moduleLoad(header, {kKernelName}));
      // A real module with names that do not exist: refused as a whole, or every name refused.
      std::vector<std::string> names;
      for (int i = 0; i < 2000; ++i) names.push_back("no_such_kernel_" + std::to_string(i));
      const CallResult many = call(moduleLoad(fatbin_, names));
      bool everyNameRefused = many.transportOk() && many.reply.has_module_loaded();
      if (everyNameRefused) {
        for (const v1::FunctionInfo& info : many.reply.module_loaded().functions()) {
          everyNameRefused = everyNameRefused && info.error() != 0 && info.token() == 0;
        }
      }
      property("module_load with 2000 unknown function names: none resolves",
               many.refused() || everyNameRefused ? "" : "some name resolved: " + many.describe());
      if (many.transportOk() && many.reply.has_module_loaded()) {
        v1::CallRequest unload;
        unload.mutable_module_unload()->set_module(many.reply.module_loaded().module());
        call(unload);
      }
    }
    if (function_ == 0) {
      property("launch cases", "skipped: no kernel could be loaded");
      return;
    }
    const std::string good = incrementParams(allocation_, 32);
    check("launch with an 11-byte parameter blob", Expectation::cuda(kInvalidValue),
          launch(function_, good.substr(0, 11)));
    check("launch with a 13-byte parameter blob", Expectation::cuda(kInvalidValue),
          launch(function_, good + "x"));
    check("launch with an empty parameter blob", Expectation::cuda(kInvalidValue), launch(function_, ""));
    check("launch with a 1 MiB parameter blob", Expectation::cuda(kInvalidValue),
          launch(function_, good + std::string(1 << 20, '\0')));
    // The driver reports these as invalid value or invalid configuration, depending on the case.
    check("launch with grid 0", any, launch(function_, good, 0));
    check("launch with 2048 threads per block", any, launch(function_, good, 1, 2048));
    check("launch with grid.y 70000", any, launch(function_, good, 1, 32, 0, 0, 70000));
    check("launch with 2 GiB of dynamic shared memory", any, launch(function_, good, 1, 32, 0, 2u << 30));

    // Positive control: this raw client can launch, and the kernel really ran.
    std::string zeros(128, '\0');
    call(htod(allocation_, 128, 0, zeros));
    const CallResult launched = call(launch(function_, good));
    v1::CallRequest sync;
    sync.mutable_device_synchronize();
    call(sync);
    const CallResult after = call(dtoh(allocation_, 128, 0, 128));
    std::string ones;
    for (int i = 0; i < 32; ++i) ones.append("\x01\x00\x00\x00", 4);
    property("a valid launch from the raw client increments 32 words",
             launched.refused()                                   ? "launch: " + launched.describe()
             : after.refused()                                    ? "dtoh: " + after.describe()
             : after.reply.host_data().data() == ones || fakeGpu_ ? ""
                                                                  : "the kernel's effect is wrong");
    call(htod(allocation_, 4096, 0, std::string(4096, '\x11')));
  }

  void crossSessionCases(Session& first) {
    Session second(daemonTarget_);
    const std::string openError = second.open("adversary_wire (second client)");
    if (!openError.empty()) {
      property("open a second session", openError);
      return;
    }
    const std::string endpoint2 = second.assignment().worker_endpoint();
    const std::string token2 = second.token();
    WorkerClient other(endpoint2);
    property("the two sessions have different tokens", token2 != token_ ? "" : "the same token twice");
    auto otherCall = [&](const std::string& name, const Expectation& expected,
                         const v1::CallRequest& request) {
      record("second client: " + name, expected, other.call(request, token2));
    };
    otherCall("mem_free(first client's allocation)", Expectation::cuda(kInvalidValue), memFree(allocation_));
    otherCall("dtoh(first client's allocation)", Expectation::cuda(kInvalidValue),
              dtoh(allocation_, 16, 0, 16));
    otherCall("htod(first client's allocation)", Expectation::cuda(kInvalidValue),
              htod(allocation_, 16, 0, std::string(16, 'z')));
    otherCall("memset(first client's allocation)", Expectation::cuda(kInvalidValue),
              memsetRequest(allocation_, 16));
    v1::CallRequest r;
    r.mutable_stream_synchronize()->set_stream(stream_);
    otherCall("stream_synchronize(first client's stream)", Expectation::cuda(kInvalidResourceHandle), r);
    r.Clear();
    r.mutable_event_record()->set_event(event_);
    otherCall("event_record(first client's event)", Expectation::cuda(kInvalidResourceHandle), r);
    otherCall("launch_kernel(first client's function)", Expectation::anyRefusal(),
              launch(function_, incrementParams(allocation_, 32)));
    r.Clear();
    r.mutable_module_unload()->set_module(module_);
    otherCall("module_unload(first client's module)", Expectation::anyRefusal(), r);
    otherCall("cufft exec(first client's plan)", Expectation::anyRefusal(),
              cufftExec(plan_, allocation_, allocation_));
    otherCall("cufft destroy(first client's plan)", Expectation::anyRefusal(),
              adapterCall("cufft", "destroy", [&](v1::AdapterCall* c) { c->add_args()->set_handle(plan_); }));
    if (endpoint2 != first.assignment().worker_endpoint()) {
      record("first client's token at the second client's worker", Expectation::auth(),
             other.call(memAlloc(4096), token_));
      record("second client's token at the first client's worker", Expectation::auth(),
             worker_->call(memAlloc(4096), token2));
    } else {
      std::fprintf(stderr,
                   "both sessions were given the same worker; cross-worker token checks not applicable\n");
    }
    const CallResult content = call(dtoh(allocation_, 4096, 0, 4096));
    property("first client's allocation is intact after the second client's attempts",
             content.refused()                                               ? "dtoh: " + content.describe()
             : content.reply.host_data().data() == std::string(4096, '\x11') ? ""
                                                                             : "its bytes changed");
    second.close();
    property("first client still works after the second session ended", roundTrip());
  }

  void staleTokenCase(Session& first) {
    first.close();
    // The daemon releases the session asynchronously; give it a few seconds.
    CallResult last;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      last = worker_->call(memAlloc(4096), token_);
      if (last.refused()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (std::chrono::steady_clock::now() < deadline);
    std::printf("%-66s | %-34s | %-40s | %s\n", "token of an ended session (within 10 s)", "any refusal",
                last.describe().substr(0, 40).c_str(), last.refused() ? "PASS" : "FAIL");
    (last.refused() ? passed_ : failed_) += 1;
  }

  const std::string daemonTarget_;
  const Bytes fatbin_;
  const bool fakeGpu_;
  std::string token_;
  std::unique_ptr<WorkerClient> worker_;
  std::uint64_t allocation_ = 0;
  std::uint64_t stream_ = 0;
  std::uint64_t event_ = 0;
  std::uint64_t module_ = 0;
  std::uint64_t function_ = 0;
  std::uint64_t plan_ = 0;
  std::uint32_t paramBufferSize_ = 0;
  int passed_ = 0;
  int failed_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string socketPath, fatbinFrom;
  bool fakeGpu = false, usageError = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--fake-gpu") {
      fakeGpu = true;
    } else if (flag == "--socket" && i + 1 < argc) {
      socketPath = argv[++i];
    } else if (flag == "--fatbin-from" && i + 1 < argc) {
      fatbinFrom = argv[++i];
    } else {
      usageError = true;
    }
  }
  if (usageError || socketPath.empty() || fatbinFrom.empty()) {
    std::fprintf(stderr, "usage: %s --socket PATH --fatbin-from EXECUTABLE [--fake-gpu]\n", argv[0]);
    return 2;
  }
  Bytes fatbin = agileos::adversary::fatbinContaining(fatbinFrom, kKernelName);
  if (fatbin.empty()) {
    std::fprintf(stderr, "adversary_wire: no fatbin with %s in %s\n", kKernelName, fatbinFrom.c_str());
    return 2;
  }
  return WireAdversary(socketPath, std::move(fatbin), fakeGpu).run();
}
