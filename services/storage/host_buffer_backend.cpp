#include "services/storage/host_buffer_backend.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "services/storage/shared_file_mapping.h"

namespace agileos::services::storage {
namespace {

class HostSlotWriter final : public SlotWriter {
 public:
  HostSlotWriter(std::byte* buffer, std::uint32_t slot_bytes) : buffer_(buffer), staging_(slot_bytes) {}

  std::byte* staging() override { return staging_.data(); }

  int write(std::uint64_t buffer_offset, std::size_t bytes, std::string*) override {
    std::memcpy(buffer_ + buffer_offset, staging_.data(), bytes);
    return 0;
  }

 private:
  std::byte* buffer_;
  std::vector<std::byte> staging_;
};

class HostImportedBuffer final : public ImportedBuffer {
 public:
  explicit HostImportedBuffer(SharedFileMapping mapping) : mapping_(std::move(mapping)) {}

  std::unique_ptr<SlotWriter> makeWriter(std::uint32_t slot_bytes, std::string*) override {
    return std::make_unique<HostSlotWriter>(mapping_.data(), slot_bytes);
  }

 private:
  SharedFileMapping mapping_;
};

class HostBufferBackend final : public BufferBackend {
 public:
  const char* name() const override { return "host"; }

  std::unique_ptr<ImportedBuffer> import(int fd, std::uint64_t bytes, int* error,
                                         std::string* reason) override {
    SharedFileMapping mapping;
    if (int mapped = mapping.map(fd, bytes, reason); mapped != 0) {
      *error = mapped;
      return nullptr;
    }
    return std::make_unique<HostImportedBuffer>(std::move(mapping));
  }
};

}  // namespace

std::unique_ptr<BufferBackend> makeHostBufferBackend() { return std::make_unique<HostBufferBackend>(); }

}  // namespace agileos::services::storage
