#include "services/storage/cuda_buffer_backend.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

#include "services/storage/cuda_driver.h"

namespace agileos::services::storage {
namespace {

// The service's device and its primary context, set up once at the first import.
struct CudaDevice {
  const CudaDriver* driver = nullptr;
  int ordinal = 0;
  CUcontext context = nullptr;  // retained for the life of the process
};

// Copies into the imported buffer are at least this long (within the slot). Measured on the H200:
// with the client's kernel polling on the GPU, a 4 or 16 KiB cuMemcpyHtoDAsync from this
// (second) context took ~2.4 ms, a GPU time slice, while 64 KiB and more took tens of
// microseconds: small copies appear to need the context scheduled, larger ones go to a copy
// engine. Copying 64 KiB of the slot costs ~5 us of PCIe time instead. (A later probe put the
// host-to-device threshold between 16 and 32 KiB, and found device-to-device copies and memsets
// from this context slow at every size up to 64 KiB: docs/performance.md.)
constexpr std::size_t kMinimumCopyBytes = 64 * 1024;

class CudaSlotWriter final : public SlotWriter {
 public:
  CudaSlotWriter(const CudaDevice& device, CUdeviceptr base) : device_(device), base_(base) {}

  ~CudaSlotWriter() override {
    const CudaDriver& cu = *device_.driver;
    cu.ctxSetCurrent(device_.context);  // the destructor may run on any thread
    if (stream_ != nullptr) cu.streamDestroy(stream_);
    if (staging_ != nullptr) cu.memFreeHost(staging_);
  }

  // Stream and staging; false with *reason on failure (the destructor frees what was made).
  bool init(std::uint32_t slot_bytes, std::string* reason) {
    const CudaDriver& cu = *device_.driver;
    if (CUresult r = cu.ctxSetCurrent(device_.context); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuCtxSetCurrent", r);
      return false;
    }
    if (CUresult r = cu.streamCreate(&stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuStreamCreate", r);
      return false;
    }
    void* staging = nullptr;
    if (CUresult r = cu.memHostAlloc(&staging, slot_bytes, 0); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemHostAlloc", r);
      return false;
    }
    staging_ = static_cast<std::byte*>(staging);
    slot_bytes_ = slot_bytes;
    return true;
  }

  std::byte* staging() override { return staging_; }

  int write(std::uint64_t buffer_offset, std::size_t bytes, std::string* reason) override {
    // The padding is zeroed: the slot's tail then holds nothing, not an older read's bytes.
    const std::size_t copied = std::min<std::size_t>(slot_bytes_, std::max(bytes, kMinimumCopyBytes));
    if (copied > bytes) std::memset(staging_ + bytes, 0, copied - bytes);
    return copy(base_ + buffer_offset, copied, reason);
  }

  // Never padded (the target is the client's own data), so a copy under kMinimumCopyBytes may
  // wait for a GPU time slice while the client's kernel runs.
  int writeTo(const ImportedBuffer& target, std::uint64_t target_offset, std::size_t bytes,
              std::string* reason) override;

 private:
  // staging_[0, bytes) to `destination` on this writer's stream, in the service's context
  // (every import of the backend is mapped in it), synchronised before returning.
  int copy(CUdeviceptr destination, std::size_t bytes, std::string* reason) {
    const CudaDriver& cu = *device_.driver;
    // The context is current per thread; the writer is made on a connection thread and used
    // on its poller thread.
    if (bound_thread_ != std::this_thread::get_id()) {
      if (CUresult r = cu.ctxSetCurrent(device_.context); r != CUDA_SUCCESS) {
        *reason = cu.describe("cuCtxSetCurrent", r);
        return -EIO;
      }
      bound_thread_ = std::this_thread::get_id();
    }
    if (CUresult r = cu.memcpyHtoDAsync(destination, staging_, bytes, stream_); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemcpyHtoDAsync", r);
      return -EIO;
    }
    if (CUresult r = cu.streamSynchronize(stream_); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuStreamSynchronize", r);
      return -EIO;
    }
    return 0;
  }

  const CudaDevice& device_;
  const CUdeviceptr base_;
  CUstream stream_ = nullptr;
  std::byte* staging_ = nullptr;
  std::size_t slot_bytes_ = 0;  // the slot's size: a write never goes past it
  std::thread::id bound_thread_;
};

// One imported allocation, mapped at [base_, base_ + bytes_). The steps done so far are undone
// by the destructor, in reverse order.
class CudaImportedBuffer final : public ImportedBuffer {
 public:
  CudaImportedBuffer(const CudaDevice& device, std::uint64_t bytes) : device_(device), bytes_(bytes) {}

  ~CudaImportedBuffer() override {
    const CudaDriver& cu = *device_.driver;
    cu.ctxSetCurrent(device_.context);
    if (mapped_) cu.memUnmap(base_, bytes_);
    if (base_ != 0) cu.memAddressFree(base_, bytes_);
    if (imported_) cu.memRelease(handle_);
  }

  // 0, or a negative errno with *reason.
  int import(int fd, std::string* reason) {
    const CudaDriver& cu = *device_.driver;
    if (CUresult r = cu.ctxSetCurrent(device_.context); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuCtxSetCurrent", r);
      return -EIO;
    }
    // The driver does not take fd: the caller closes it, and the import keeps the memory.
    void* os_handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd));
    if (CUresult r =
            cu.memImportFromShareableHandle(&handle_, os_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemImportFromShareableHandle", r);
      return -EINVAL;
    }
    imported_ = true;
    CUmemAllocationProp properties{};
    if (CUresult r = cu.memGetAllocationPropertiesFromHandle(&properties, handle_); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemGetAllocationPropertiesFromHandle", r);
      return -EINVAL;
    }
    if (properties.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        properties.location.id != device_.ordinal) {
      *reason = "the buffer is not memory of device " + std::to_string(device_.ordinal) +
                " (the service's --device); location type " + std::to_string(properties.location.type) +
                ", id " + std::to_string(properties.location.id);
      return -EXDEV;
    }
    std::size_t granularity = 0;
    if (CUresult r =
            cu.memGetAllocationGranularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemGetAllocationGranularity", r);
      return -EIO;
    }
    // cuMemMap maps whole granules: the size (buffer_bytes at ATTACH, handle_bytes at
    // REGISTER_BUFFER) must be a multiple, as every cuMemCreate allocation's size is.
    if (granularity == 0 || bytes_ % granularity != 0) {
      *reason = "size " + std::to_string(bytes_) + " is not a multiple of the allocation granularity " +
                std::to_string(granularity);
      return -EINVAL;
    }
    if (CUresult r = cu.memAddressReserve(&base_, bytes_, granularity, 0, 0); r != CUDA_SUCCESS) {
      base_ = 0;
      *reason = cu.describe("cuMemAddressReserve", r);
      return -ENOMEM;
    }
    // From offset 0 of the allocation (cuMemMap takes no other offset): a registered range is an
    // offset into this mapping, never a mapping of its own.
    if (CUresult r = cu.memMap(base_, bytes_, 0, handle_, 0); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemMap", r) + " (size larger than the exported allocation?)";
      return -EINVAL;
    }
    mapped_ = true;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_.ordinal;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (CUresult r = cu.memSetAccess(base_, bytes_, &access, 1); r != CUDA_SUCCESS) {
      *reason = cu.describe("cuMemSetAccess", r);
      return -EIO;
    }
    return 0;
  }

  std::uint64_t size() const override { return bytes_; }
  CUdeviceptr base() const { return base_; }
  const CudaDevice& device() const { return device_; }

  std::unique_ptr<SlotWriter> makeWriter(std::uint32_t slot_bytes, std::string* reason) override {
    auto writer = std::make_unique<CudaSlotWriter>(device_, base_);
    if (!writer->init(slot_bytes, reason)) return nullptr;
    return writer;
  }

 private:
  const CudaDevice& device_;
  const std::uint64_t bytes_;
  CUmemGenericAllocationHandle handle_ = 0;
  bool imported_ = false;
  CUdeviceptr base_ = 0;
  bool mapped_ = false;
};

int CudaSlotWriter::writeTo(const ImportedBuffer& target, std::uint64_t target_offset, std::size_t bytes,
                            std::string* reason) {
  const auto* cuda = dynamic_cast<const CudaImportedBuffer*>(&target);
  if (cuda == nullptr || &cuda->device() != &device_) {
    *reason = "the target was not imported by this cuda backend";
    return -EINVAL;
  }
  if (!fitsWithin(cuda->size(), target_offset, bytes) || bytes > slot_bytes_) {
    *reason = std::to_string(bytes) + " bytes at " + std::to_string(target_offset) +
              " are not within the target's " + std::to_string(cuda->size()) + " bytes";
    return -ERANGE;
  }
  return copy(cuda->base() + target_offset, bytes, reason);
}

class CudaBufferBackend final : public BufferBackend {
 public:
  explicit CudaBufferBackend(int device_ordinal) { device_.ordinal = device_ordinal; }

  const char* name() const override { return "cuda"; }

  std::unique_ptr<ImportedBuffer> import(int fd, std::uint64_t bytes, int* error,
                                         std::string* reason) override {
    if (!ensureDevice(reason)) {
      *error = -ENODEV;
      return nullptr;
    }
    auto buffer = std::make_unique<CudaImportedBuffer>(device_, bytes);
    if (int imported = buffer->import(fd, reason); imported != 0) {
      *error = imported;
      return nullptr;
    }
    return buffer;
  }

 private:
  // Loads and initialises CUDA once; the outcome, failure included, is kept.
  bool ensureDevice(std::string* reason) {
    std::call_once(init_once_, [this] { init_failure_ = initDevice(); });
    if (!init_failure_.empty()) *reason = init_failure_;
    return init_failure_.empty();
  }

  // "" on success, else why CUDA is unusable.
  std::string initDevice() {
    std::string reason;
    const CudaDriver* cu = loadCudaDriver(&reason);
    if (cu == nullptr) return reason;
    if (CUresult r = cu->init(0); r != CUDA_SUCCESS) return cu->describe("cuInit", r);
    CUdevice device = 0;
    if (CUresult r = cu->deviceGet(&device, device_.ordinal); r != CUDA_SUCCESS)
      return cu->describe("cuDeviceGet", r) + " (--device " + std::to_string(device_.ordinal) + ")";
    if (CUresult r = cu->primaryCtxRetain(&device_.context, device); r != CUDA_SUCCESS)
      return cu->describe("cuDevicePrimaryCtxRetain", r);
    device_.driver = cu;
    return "";
  }

  std::once_flag init_once_;
  std::string init_failure_;
  CudaDevice device_;  // read-only once init_once_ has run; buffers and writers refer to it
};

}  // namespace

std::unique_ptr<BufferBackend> makeCudaBufferBackend(int device_ordinal) {
  return std::make_unique<CudaBufferBackend>(device_ordinal);
}

}  // namespace agileos::services::storage
