// Tensor maps on the fake GPU (worker/handlers/tensor_map_handlers.cpp): the worker encodes only
// maps whose whole range lies inside one live allocation of the client, and a guarded kernel with
// a tensor-map parameter launches only with the bytes of a map the worker issued to that client,
// over memory that is still allocated.
#include <driver_types.h>
#include <gtest/gtest.h>

#include <string>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/session_guard.h"
#include "worker/tensor_maps/tensor_map_description.h"

namespace agileos::worker::testing {
namespace {

constexpr std::uint64_t kAllocation = 64 * 1024;

// A 2D float map: `width` x `height` elements, rows `pitch` bytes apart, 32 x 32 boxes.
v1::CallRequest tiled(std::uint64_t address, std::uint64_t width = 64, std::uint64_t height = 32,
                      std::uint64_t pitch = 256, std::uint32_t rank = 2) {
  v1::CallRequest request;
  v1::TensorMapEncode* args = request.mutable_tensor_map_encode();
  args->set_kind(v1::TensorMapEncode::TILED);
  args->set_data_type(CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  args->set_rank(rank);
  args->set_global_address(address);
  for (std::uint32_t i = 0; i < rank; ++i) {
    args->add_global_dim(i == 0 ? width : height);
    args->add_box_dim(32);
    args->add_element_strides(1);
    if (i + 1 < rank) args->add_global_strides(pitch * (i + 1));
  }
  return request;
}

v1::CallRequest replace(const std::string& map, std::uint64_t address) {
  v1::CallRequest request;
  request.mutable_tensor_map_encode()->set_kind(v1::TensorMapEncode::REPLACE_ADDRESS);
  request.mutable_tensor_map_encode()->set_map(map);
  request.mutable_tensor_map_encode()->set_global_address(address);
  return request;
}

GuardConfig trap() {
  GuardConfig c;
  c.enabled = true;
  c.ptx = guardOptionsFor(ptx::GuardPolicy::kTrap, 0);
  return c;
}

TEST(TensorMaps, ARangeInsideOneAllocationIsEncoded) {
  WorkerHarness harness;
  TestClient client = harness.attach(1);
  const memmgr::DevicePtr p = client.malloc(kAllocation);
  const v1::CallReply reply = client.call(tiled(p));
  ASSERT_EQ(reply.error(), cudaSuccess) << describe(reply);
  EXPECT_EQ(reply.tensor_map_encoded().map().size(), 128u);
  // The last byte of the allocation is reachable: 64 * 4 + (256 - 1) * 256 = 65536.
  EXPECT_EQ(client.call(tiled(p, 64, 256)).error(), cudaSuccess);
}

TEST(TensorMaps, DescriptionsTheWorkerCannotBoundAreRefused) {
  WorkerHarness harness;
  TestClient client = harness.attach(1);
  const memmgr::DevicePtr p = client.malloc(kAllocation);
  // One row past the allocation.
  EXPECT_EQ(client.call(tiled(p, 64, 257)).error(), cudaErrorInvalidValue);
  // Inside the allocation but running past its end from an offset.
  EXPECT_EQ(client.call(tiled(p + 256, 64, 256)).error(), cudaErrorInvalidValue);
  // The extent overflows 64 bits: (2^32 - 1) * (2^40 - 16) in each of two dimensions.
  v1::CallRequest overflow = tiled(p, 1ull << 32, 1ull << 32, (1ull << 40) - 16, 3);
  overflow.mutable_tensor_map_encode()->set_global_strides(1, (1ull << 40) - 16);
  const v1::CallReply overflowed = client.call(overflow);
  EXPECT_EQ(overflowed.error(), cudaErrorInvalidValue);
  EXPECT_NE(overflowed.error_detail().find("overflows"), std::string::npos) << describe(overflowed);
  // Ranks 0 and 6.
  EXPECT_EQ(client.call(tiled(p, 64, 32, 256, 0)).error(), cudaErrorInvalidValue);
  v1::CallRequest six = tiled(p, 1, 1, 16, 5);
  six.mutable_tensor_map_encode()->set_rank(6);
  EXPECT_EQ(client.call(six).error(), cudaErrorInvalidValue);
  // Arrays that do not match the rank.
  v1::CallRequest shortDims = tiled(p);
  shortDims.mutable_tensor_map_encode()->mutable_global_dim()->RemoveLast();
  EXPECT_EQ(client.call(shortDims).error(), cudaErrorInvalidValue);
  // Unaligned address and stride.
  EXPECT_EQ(client.call(tiled(p + 4)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(tiled(p, 64, 32, 260)).error(), cudaErrorInvalidValue);
  // Packed sub-byte types are not supported yet.
  v1::CallRequest packed = tiled(p);
  packed.mutable_tensor_map_encode()->set_data_type(CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B);
  EXPECT_EQ(client.call(packed).error(), cudaErrorNotSupported);
  // Memory that is not the client's: never allocated, the protected range, another client's.
  EXPECT_EQ(client.call(tiled(p + (1ull << 30))).error(), cudaErrorInvalidValue);
  EXPECT_NE(client.call(tiled(memmgr::kModuleRange.begin)).error(), cudaSuccess);
  TestClient other = harness.attach(2);
  const memmgr::DevicePtr theirs = other.malloc(kAllocation);
  EXPECT_NE(client.call(tiled(theirs)).error(), cudaSuccess);
  // Freed memory.
  client.free(p);
  EXPECT_NE(client.call(tiled(p)).error(), cudaSuccess);
}

TEST(TensorMaps, ReplaceAddressTakesOnlyIssuedMapsAndChecksTheNewRange) {
  WorkerHarness harness;
  TestClient client = harness.attach(1);
  const memmgr::DevicePtr p = client.malloc(kAllocation), q = client.malloc(kAllocation);
  const std::string map = client.call(tiled(p)).tensor_map_encoded().map();
  ASSERT_EQ(map.size(), 128u);
  const v1::CallReply moved = client.call(replace(map, q));
  ASSERT_EQ(moved.error(), cudaSuccess) << describe(moved);
  EXPECT_NE(moved.tensor_map_encoded().map(), map);
  EXPECT_EQ(moved.tensor_map_encoded().map(), client.call(tiled(q)).tensor_map_encoded().map());
  // Past the end of the new allocation.
  EXPECT_EQ(client.call(replace(map, q + kAllocation - 256)).error(), cudaErrorInvalidValue);
  // A map the worker did not issue (forged, or another client's).
  std::string forged = map;
  forged[0] ^= 1;
  EXPECT_EQ(client.call(replace(forged, q)).error(), cudaErrorInvalidValue);
  TestClient other = harness.attach(2);
  EXPECT_EQ(other.call(replace(map, other.malloc(kAllocation))).error(), cudaErrorInvalidValue);
}

// nvcc's form of a kernel taking `const __grid_constant__ CUtensorMap` and a pointer.
constexpr char kTensorKernel[] = R"(.version 8.8
.target sm_90
.address_size 64

.visible .entry tma(
	.param .align 128 .b8 tma_param_0[128],
	.param .u64 tma_param_1
)
{
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;
	.shared .align 128 .b8 tile[4096];

	mov.b64 	%rd1, tma_param_0;
	cvta.param.u64 	%rd4, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, tile;
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group 	[%rd4, {%r1, %r1}], [%r2];
	ret;
}
)";

struct Launcher {
  TestClient& client;
  std::uint64_t function = 0;

  int launch(const std::string& map) {
    std::string params = map;
    params.append(8, '\0');
    return client.call(requests::launchKernel(function, params)).error();
  }
};

Launcher loadTensorKernel(TestClient& client) {
  v1::CallRequest load;
  load.mutable_module_load_image()->set_image(std::string(kTensorKernel) + '\0');
  const v1::CallReply loaded = client.call(load);
  EXPECT_EQ(loaded.error(), cudaSuccess) << describe(loaded);
  v1::CallRequest get;
  get.mutable_module_get_function()->set_module(loaded.module_loaded().module());
  get.mutable_module_get_function()->set_name("tma");
  const v1::CallReply function = client.call(get);
  EXPECT_EQ(function.error(), cudaSuccess) << describe(function);
  EXPECT_EQ(function.function_info().param_buffer_size(), 136u);
  return Launcher{client, function.function_info().token()};
}

TEST(TensorMaps, AGuardedKernelLaunchesOnlyWithAMapTheWorkerIssued) {
  WorkerHarness harness;
  TestClient client = harness.attach(1, trap());
  Launcher kernel = loadTensorKernel(client);
  const memmgr::DevicePtr p = client.malloc(kAllocation);
  const std::string map = client.call(tiled(p)).tensor_map_encoded().map();
  ASSERT_EQ(map.size(), 128u);
  EXPECT_EQ(kernel.launch(map), cudaSuccess);
  // A forged map: one byte changed (another base address, say).
  std::string forged = map;
  forged[0] ^= 0x40;
  EXPECT_EQ(kernel.launch(forged), cudaErrorInvalidValue);
  EXPECT_EQ(kernel.launch(std::string(128, '\0')), cudaErrorInvalidValue);
  // Another client's map.
  TestClient other = harness.attach(2, trap());
  const std::string theirs = other.call(tiled(other.malloc(kAllocation))).tensor_map_encoded().map();
  ASSERT_EQ(theirs.size(), 128u);
  EXPECT_EQ(kernel.launch(theirs), cudaErrorInvalidValue);
  // After the allocation is freed, its map no longer launches (and stays dropped).
  client.free(p);
  EXPECT_EQ(kernel.launch(map), cudaErrorInvalidValue);
  EXPECT_EQ(kernel.launch(map), cudaErrorInvalidValue);
}

// Until the GPU shows that a kernel cannot change the map the copy engine reads through its
// parameter's address, tensor copies are confined as SASS-only code is: never beside protected
// state, and a context that loaded them may not gain any.
TEST(TensorMaps, TensorCopiesNeverRunBesideProtectedState) {
  WorkerHarness harness;
  TestClient client = harness.attach(1, trap());
  memmgr::DevicePtr state = 0;
  ASSERT_EQ(harness.memory().allocateProtected(1, 4096, &state), CUDA_SUCCESS);
  v1::CallRequest load;
  load.mutable_module_load_image()->set_image(std::string(kTensorKernel) + '\0');
  const v1::CallReply refused = client.call(load);
  EXPECT_EQ(refused.error(), cudaErrorNoKernelImageForDevice) << describe(refused);
  EXPECT_NE(refused.error_detail().find("tensor copies"), std::string::npos) << refused.error_detail();
  ASSERT_EQ(harness.memory().freeProtected(1, state), CUDA_SUCCESS);

  TestClient other = harness.attach(2, trap());
  loadTensorKernel(other);
  EXPECT_NE(harness.memory().allocateProtected(2, 4096, &state), CUDA_SUCCESS)
      << "a context running tensor copies gains no protected state";
}

TEST(TensorMaps, WithoutTheGuardTheWorkerDoesNotKnowTheParameters) {
  // Unguarded code (guard off, or not applied under require = protected_state) is not parsed, so
  // its launches are not checked: such a context holds no protected state (docs/security-model.md).
  WorkerHarness harness;
  TestClient client = harness.attach(1);
  Launcher kernel = loadTensorKernel(client);
  EXPECT_EQ(kernel.launch(std::string(128, '\x01')), cudaSuccess);
}

TEST(TensorMapDescription, TheReachableRangeIsEveryElementTheMapCanAddress) {
  TensorMapDescription d;
  d.dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  d.rank = 3;
  d.globalAddress = 0x10000;
  d.globalDim = {10, 4, 3, 0, 0};
  d.globalStrides = {32, 256, 0, 0};
  d.boxDim = {8, 4, 1, 0, 0};
  d.elementStrides = {1, 1, 1, 0, 0};
  const TensorMapVerdict v = validate(d);
  ASSERT_EQ(v.result, CUDA_SUCCESS) << v.reason;
  // The last element: (9, 3, 2) at 9 * 2 + 3 * 32 + 2 * 256 = 626, two bytes.
  EXPECT_EQ(v.extentBytes, 628u);
}

}  // namespace
}  // namespace agileos::worker::testing
