#include "services/storage/host_buffer_backend.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "services/storage/shared_file_mapping.h"

namespace agileos::services::storage {
namespace {

class HostImportedBuffer final : public ImportedBuffer {
 public:
  explicit HostImportedBuffer(SharedFileMapping mapping) : mapping_(std::move(mapping)) {}

  std::uint64_t size() const override { return mapping_.size(); }
  std::byte* data() const { return mapping_.data(); }

  std::unique_ptr<SlotWriter> makeWriter(std::uint32_t slot_bytes, std::string*) override;

 private:
  SharedFileMapping mapping_;
};

class HostSlotWriter final : public SlotWriter {
 public:
  HostSlotWriter(std::byte* buffer, std::uint32_t slot_bytes) : buffer_(buffer), staging_(slot_bytes) {}

  std::byte* staging() override { return staging_.data(); }

  int write(std::uint64_t buffer_offset, std::size_t bytes, std::string*) override {
    std::memcpy(buffer_ + buffer_offset, staging_.data(), bytes);
    return 0;
  }

  int writeTo(const ImportedBuffer& target, std::uint64_t target_offset, std::size_t bytes,
              std::string* reason) override {
    const auto* host = dynamic_cast<const HostImportedBuffer*>(&target);
    if (host == nullptr) {
      *reason = "the target was not imported by the host backend";
      return -EINVAL;
    }
    if (!fitsWithin(host->size(), target_offset, bytes) || bytes > staging_.size()) {
      *reason = std::to_string(bytes) + " bytes at " + std::to_string(target_offset) +
                " are not within the target's " + std::to_string(host->size()) + " bytes";
      return -ERANGE;
    }
    std::memcpy(host->data() + target_offset, staging_.data(), bytes);
    return 0;
  }

 private:
  std::byte* buffer_;
  std::vector<std::byte> staging_;
};

std::unique_ptr<SlotWriter> HostImportedBuffer::makeWriter(std::uint32_t slot_bytes, std::string*) {
  return std::make_unique<HostSlotWriter>(mapping_.data(), slot_bytes);
}

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
