// CUDA arrays, array copies and texture and surface objects (proto ArrayTexture) on the fake GPU:
// every array, range and object a request names is the calling client's, every copy stays inside
// the array's extent and one live allocation (or the host bytes sent), objects describe only the
// client's user memory, arrays are charged to the quota and everything is released at session end.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using Step = v1::ArrayTexture::Step;
using memmgr::DevicePtr;

v1::CallRequest arrayStep(Step step) {
  v1::CallRequest request;
  request.mutable_array_texture()->set_step(step);
  return request;
}

// A float array of width x height (x depth) with `flags`.
v1::CallRequest createArray(std::uint64_t width, std::uint64_t height, std::uint64_t depth = 0,
                            unsigned flags = 0, unsigned levels = 0) {
  v1::CallRequest request =
      arrayStep(levels == 0 ? v1::ArrayTexture::ARRAY_CREATE : v1::ArrayTexture::MIPMAPPED_CREATE);
  auto* shape = request.mutable_array_texture()->mutable_shape();
  shape->set_width(width);
  shape->set_height(height);
  shape->set_depth(depth);
  shape->set_format(CU_AD_FORMAT_FLOAT);
  shape->set_channels(1);
  shape->set_flags(flags);
  request.mutable_array_texture()->set_levels(levels);
  return request;
}

v1::CallRequest destroyArray(std::uint64_t array) {
  v1::CallRequest request = arrayStep(v1::ArrayTexture::ARRAY_DESTROY);
  request.mutable_array_texture()->set_array(array);
  return request;
}

// A copy of a box of widthBytes x height x depth.
v1::CallRequest copy(std::uint64_t widthBytes, std::uint64_t height, std::uint64_t depth = 1) {
  v1::CallRequest request = arrayStep(v1::ArrayTexture::COPY);
  request.mutable_array_texture()->set_width_bytes(widthBytes);
  request.mutable_array_texture()->set_height(height);
  request.mutable_array_texture()->set_depth(depth);
  return request;
}

v1::CallRequest hostToArray(std::uint64_t array, const std::string& bytes, std::uint64_t widthBytes,
                            std::uint64_t height, std::uint64_t x = 0, std::uint64_t y = 0) {
  v1::CallRequest request = copy(widthBytes, height);
  auto* args = request.mutable_array_texture();
  args->mutable_src()->set_inline_host(true);
  args->mutable_src()->set_pitch(widthBytes);
  args->mutable_src()->set_rows(height);
  args->mutable_dst()->set_array(array);
  args->mutable_dst()->set_x(x);
  args->mutable_dst()->set_y(y);
  args->set_data(bytes);
  return request;
}

v1::CallRequest arrayToHost(std::uint64_t array, std::uint64_t widthBytes, std::uint64_t height) {
  v1::CallRequest request = copy(widthBytes, height);
  auto* args = request.mutable_array_texture();
  args->mutable_src()->set_array(array);
  args->mutable_dst()->set_inline_host(true);
  args->mutable_dst()->set_pitch(widthBytes);
  args->mutable_dst()->set_rows(height);
  return request;
}

v1::CallRequest pitchTexture(DevicePtr base, std::uint64_t width, std::uint64_t height, std::uint64_t pitch) {
  v1::CallRequest request = arrayStep(v1::ArrayTexture::TEXTURE_CREATE);
  auto* resource = request.mutable_array_texture()->mutable_resource();
  resource->set_type(CU_RESOURCE_TYPE_PITCH2D);
  resource->set_device(base);
  resource->set_format(CU_AD_FORMAT_FLOAT);
  resource->set_channels(1);
  resource->set_width(width);
  resource->set_height(height);
  resource->set_pitch(pitch);
  return request;
}

v1::CallRequest linearTexture(DevicePtr base, std::uint64_t bytes) {
  v1::CallRequest request = arrayStep(v1::ArrayTexture::TEXTURE_CREATE);
  auto* resource = request.mutable_array_texture()->mutable_resource();
  resource->set_type(CU_RESOURCE_TYPE_LINEAR);
  resource->set_device(base);
  resource->set_format(CU_AD_FORMAT_FLOAT);
  resource->set_channels(1);
  resource->set_size_bytes(bytes);
  return request;
}

v1::CallRequest arrayObject(Step step, std::uint64_t array, unsigned type = CU_RESOURCE_TYPE_ARRAY) {
  v1::CallRequest request = arrayStep(step);
  request.mutable_array_texture()->mutable_resource()->set_type(type);
  request.mutable_array_texture()->mutable_resource()->set_array(array);
  return request;
}

v1::CallRequest destroyObject(Step step, std::uint64_t object) {
  v1::CallRequest request = arrayStep(step);
  request.mutable_array_texture()->set_object(object);
  return request;
}

std::string floats(std::initializer_list<float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

class ArrayTextureTest : public ::testing::Test {
 protected:
  std::uint64_t makeArray(TestClient& client, const v1::CallRequest& request) {
    const v1::CallReply reply = client.call(request);
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    EXPECT_NE(reply.array_texture_result().array(), 0u);
    return reply.array_texture_result().array();
  }
  void expectNoMisuse() { EXPECT_TRUE(worker.gpu().misuse().empty()) << worker.gpu().misuse().front(); }

  WorkerHarness worker;
};

TEST_F(ArrayTextureTest, ARoundTripThroughAnArrayKeepsTheBytesAndTheBoxItNames) {
  TestClient client = worker.attach(1);
  const std::uint64_t array = makeArray(client, createArray(4, 3));
  const std::string row = floats({1, 2, 3, 4});
  ASSERT_EQ(client.call(hostToArray(array, row + row + row, 16, 3)).error(), 0);
  // Overwrite the middle two elements of the last row.
  ASSERT_EQ(client.call(hostToArray(array, floats({7, 8}), 8, 1, 4, 2)).error(), 0);
  const v1::CallReply back = client.call(arrayToHost(array, 16, 3));
  ASSERT_EQ(back.error(), 0) << describe(back);
  EXPECT_EQ(back.array_texture_result().data(), row + row + floats({1, 7, 8, 4}));

  // Array to device memory and back into a second array, through the client's allocation.
  const DevicePtr linear = client.malloc(64 << 10);
  v1::CallRequest toDevice = copy(16, 3);
  toDevice.mutable_array_texture()->mutable_src()->set_array(array);
  toDevice.mutable_array_texture()->mutable_dst()->set_device(linear);
  toDevice.mutable_array_texture()->mutable_dst()->set_pitch(256);
  toDevice.mutable_array_texture()->mutable_dst()->set_rows(3);
  ASSERT_EQ(client.call(toDevice).error(), 0);
  EXPECT_EQ(client.read(linear + 512, 16), floats({1, 7, 8, 4}));
  const std::uint64_t second = makeArray(client, createArray(4, 3));
  v1::CallRequest between = copy(16, 3);
  between.mutable_array_texture()->mutable_src()->set_array(array);
  between.mutable_array_texture()->mutable_dst()->set_array(second);
  ASSERT_EQ(client.call(between).error(), 0);
  EXPECT_EQ(client.call(arrayToHost(second, 16, 3)).array_texture_result().data(),
            row + row + floats({1, 7, 8, 4}));
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, CopiesOutsideTheArrayOrTheAllocationAreRefusedBeforeTheDriver) {
  TestClient client = worker.attach(1);
  const std::uint64_t array = makeArray(client, createArray(4, 3));
  const std::string row = floats({1, 2, 3, 4});
  // One element past the row, one row past the array, a start inside an element.
  EXPECT_EQ(client.call(hostToArray(array, row, 16, 1, 4, 0)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(hostToArray(array, row, 16, 1, 0, 3)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(hostToArray(array, floats({1}), 4, 1, 2, 0)).error(), cudaErrorInvalidValue);
  // A y offset near 2^64 that would wrap.
  EXPECT_EQ(client.call(hostToArray(array, row, 16, 2, 0, ~0ull)).error(), cudaErrorInvalidValue);
  // More bytes declared than sent.
  EXPECT_EQ(client.call(hostToArray(array, row, 16, 2)).error(), cudaErrorInvalidValue);

  // Device side: the pitched span must lie in one live allocation.
  const DevicePtr linear = client.malloc(4096);
  v1::CallRequest past = copy(16, 3);
  past.mutable_array_texture()->mutable_src()->set_array(array);
  past.mutable_array_texture()->mutable_dst()->set_device(linear + 4096 - 2 * 2048);
  past.mutable_array_texture()->mutable_dst()->set_pitch(2048);
  past.mutable_array_texture()->mutable_dst()->set_rows(3);
  EXPECT_NE(client.call(past).error(), 0) << "the third row lies past the allocation";
  v1::CallRequest narrowPitch = past;
  narrowPitch.mutable_array_texture()->mutable_dst()->set_device(linear);
  narrowPitch.mutable_array_texture()->mutable_dst()->set_pitch(8);
  EXPECT_EQ(client.call(narrowPitch).error(), cudaErrorInvalidPitchValue);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kCopy3D), 0u) << "every refusal came before the driver";

  // A copy naming no array, or two kinds of memory at one end.
  v1::CallRequest noArray = copy(16, 1);
  noArray.mutable_array_texture()->mutable_src()->set_device(linear);
  noArray.mutable_array_texture()->mutable_dst()->set_device(linear);
  EXPECT_EQ(client.call(noArray).error(), cudaErrorInvalidValue);
  v1::CallRequest twoKinds = hostToArray(array, row, 16, 1);
  twoKinds.mutable_array_texture()->mutable_src()->set_device(linear);
  EXPECT_EQ(client.call(twoKinds).error(), cudaErrorInvalidValue);
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, ForgedAndForeignArrayAndObjectTokensAreRefused) {
  TestClient alice = worker.attach(1);
  TestClient bob = worker.attach(2);
  const std::uint64_t array = makeArray(alice, createArray(8, 8, 0, CUDA_ARRAY3D_SURFACE_LDST));
  const v1::CallReply surface = alice.call(arrayObject(v1::ArrayTexture::SURFACE_CREATE, array));
  ASSERT_EQ(surface.error(), 0) << describe(surface);
  const v1::CallReply texture = alice.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, array));
  ASSERT_EQ(texture.error(), 0) << describe(texture);

  // Bob cannot copy, view, destroy or query Alice's array, nor destroy her objects.
  EXPECT_EQ(bob.call(arrayToHost(array, 32, 8)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(bob.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, array)).error(),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(bob.call(destroyArray(array)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(
      bob.call(destroyObject(v1::ArrayTexture::SURFACE_DESTROY, surface.array_texture_result().object()))
          .error(),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      bob.call(destroyObject(v1::ArrayTexture::TEXTURE_DESTROY, texture.array_texture_result().object()))
          .error(),
      cudaErrorInvalidValue);
  // Forged tokens, and an object of the other kind.
  EXPECT_EQ(alice.call(arrayToHost(array + 1, 32, 8)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(alice.call(destroyArray(0x1234)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(
      alice.call(destroyObject(v1::ArrayTexture::SURFACE_DESTROY, texture.array_texture_result().object()))
          .error(),
      surface.array_texture_result().object() == texture.array_texture_result().object()
          ? 0
          : cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().liveObjects(), 2u);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kTexObjectDestroy), 0u);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kSurfObjectDestroy), 0u);
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, SurfacesNeedAnArrayOfTheClient) {
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
  const std::uint64_t theirs = makeArray(other, createArray(8, 8, 0, CUDA_ARRAY3D_SURFACE_LDST));
  EXPECT_EQ(client.call(arrayObject(v1::ArrayTexture::SURFACE_CREATE, theirs)).error(),
            cudaErrorInvalidResourceHandle);
  const DevicePtr linear = client.malloc(4096);
  v1::CallRequest overLinear = linearTexture(linear, 4096);
  overLinear.mutable_array_texture()->set_step(v1::ArrayTexture::SURFACE_CREATE);
  EXPECT_EQ(client.call(overLinear).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kSurfObjectCreate), 0u);
}

TEST_F(ArrayTextureTest, LinearResourcesMustStartInOneLiveUserAllocation) {
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
  const DevicePtr mine = client.malloc(4096);
  const DevicePtr theirs = other.malloc(4096);
  const v1::CallReply good = client.call(linearTexture(mine, 4096));
  ASSERT_EQ(good.error(), 0) << describe(good);
  // Longer than its allocation: made over the allocation only, as the driver accepts the view.
  EXPECT_EQ(client.call(linearTexture(mine, 4097)).error(), 0) << "one byte past the allocation: clamped";
  EXPECT_NE(client.call(linearTexture(theirs, 256)).error(), 0) << "another client's memory";
  EXPECT_NE(client.call(pitchTexture(mine, 16, 9, 512)).error(), 0) << "pitch * height = 4608 > 4096";
  EXPECT_EQ(client.call(pitchTexture(mine, 16, 8, 512)).error(), 0) << "pitch * height = 4096";
  EXPECT_EQ(client.call(pitchTexture(mine, 16, 2, 32)).error(), cudaErrorInvalidValue)
      << "a row wider than its pitch";
  EXPECT_EQ(client.call(pitchTexture(mine, 1, 1ull << 40, 1ull << 30)).error(), cudaErrorInvalidValue)
      << "pitch * height overflows";

  // Protected memory of the client's own session (module state) is never a texture's.
  DevicePtr state = 0;
  ASSERT_EQ(worker.memory().allocateProtected(1, 4096, &state), CUDA_SUCCESS);
  EXPECT_NE(client.call(linearTexture(state, 256)).error(), 0);
  EXPECT_NE(client.call(pitchTexture(state, 16, 1, 64)).error(), 0);
  // Freed memory is no longer the client's.
  client.free(mine);
  EXPECT_NE(client.call(linearTexture(mine, 256)).error(), 0);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kTexObjectCreate), 3u)
      << "only the three good ones reached the driver";
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, ArraysAreChargedToTheQuotaAndReleasedAtSessionEnd) {
  ASSERT_TRUE(worker.runtime().attach(1, WorkerHarness::tokenFor(1), {}, {}, {}, 64ull << 20));
  TestClient client(worker.runtime(), 1, WorkerHarness::tokenFor(1));
  // 2048 x 2048 floats: 16 MiB each.
  std::vector<std::uint64_t> arrays;
  v1::CallReply reply;
  while ((reply = client.call(createArray(2048, 2048))).error() == 0) {
    arrays.push_back(reply.array_texture_result().array());
    ASSERT_LE(arrays.size(), 4u);
  }
  EXPECT_EQ(reply.error(), cudaErrorMemoryAllocation) << describe(reply);
  EXPECT_EQ(arrays.size(), 4u);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), 64ull << 20);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kArrayCreate), 4u)
      << "the one that did not fit never reached the driver";
  ASSERT_EQ(client.call(destroyArray(arrays.back())).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), 48ull << 20);
  // A failed creation leaves no charge.
  worker.gpu().failNext(FakeGpuCall::kArrayCreate, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(client.call(createArray(16, 16)).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), 48ull << 20);

  const std::uint64_t withObject = arrays.front();
  ASSERT_EQ(client.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, withObject)).error(), 0);
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(worker.memory().driverCharge(1), 0u);
  EXPECT_EQ(worker.gpu().liveArrays(), 0u);
  EXPECT_EQ(worker.gpu().liveObjects(), 0u);
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, AnArrayViewedByAnObjectLivesUntilItsLastObjectIsDestroyed) {
  TestClient client = worker.attach(1);
  const std::uint64_t array = makeArray(client, createArray(8, 8));
  const v1::CallReply texture = client.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, array));
  ASSERT_EQ(texture.error(), 0);
  const std::uint64_t charge = worker.memory().driverCharge(1, memmgr::DriverShare::kArrays);
  ASSERT_EQ(client.call(destroyArray(array)).error(), 0);
  // The token is gone for the client; the driver array and its charge stay with the object.
  EXPECT_EQ(client.call(arrayToHost(array, 32, 8)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(client.call(destroyArray(array)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().liveArrays(), 1u);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), charge);
  ASSERT_EQ(
      client.call(destroyObject(v1::ArrayTexture::TEXTURE_DESTROY, texture.array_texture_result().object()))
          .error(),
      0);
  EXPECT_EQ(worker.gpu().liveArrays(), 0u);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), 0u);
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, MipmapLevelsAreArraysOfTheirOwnExtentThatGoWithTheirParent) {
  TestClient client = worker.attach(1);
  EXPECT_EQ(client.call(createArray(8, 8, 0, 0, 5)).error(), cudaErrorInvalidValue) << "8x8 has 4 levels";
  const std::uint64_t mipmapped = makeArray(client, createArray(8, 8, 0, 0, 4));
  v1::CallRequest level = arrayStep(v1::ArrayTexture::MIPMAP_LEVEL);
  level.mutable_array_texture()->set_array(mipmapped);
  level.mutable_array_texture()->set_level(2);
  const v1::CallReply levelReply = client.call(level);
  ASSERT_EQ(levelReply.error(), 0) << describe(levelReply);
  EXPECT_EQ(levelReply.array_texture_result().shape().width(), 2u);
  const std::uint64_t levelArray = levelReply.array_texture_result().array();
  EXPECT_EQ(client.call(level).array_texture_result().array(), levelArray) << "one token per level";
  EXPECT_EQ(client.call(hostToArray(levelArray, floats({1, 2}), 8, 1)).error(), 0);
  EXPECT_EQ(client.call(hostToArray(levelArray, floats({1, 2, 3}), 12, 1)).error(), cudaErrorInvalidValue)
      << "wider than the level";
  level.mutable_array_texture()->set_level(4);
  EXPECT_EQ(client.call(level).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(destroyArray(levelArray)).error(), cudaErrorInvalidValue)
      << "a level goes with its parent";
  EXPECT_EQ(client.call(arrayToHost(mipmapped, 32, 8)).error(), cudaErrorInvalidResourceHandle)
      << "a mipmapped array is copied level by level";
  ASSERT_EQ(
      client.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, mipmapped, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY))
          .error(),
      0);
  ASSERT_EQ(client.call(destroyArray(mipmapped)).error(), 0);
  EXPECT_EQ(client.call(hostToArray(levelArray, floats({1, 2}), 8, 1)).error(),
            cudaErrorInvalidResourceHandle)
      << "its levels went with it";
  expectNoMisuse();
}

TEST_F(ArrayTextureTest, DescriptorsTheWorkerDoesNotAdmitAreRefused) {
  TestClient client = worker.attach(1);
  v1::CallRequest badFormat = createArray(8, 8);
  badFormat.mutable_array_texture()->mutable_shape()->set_format(0x77);
  EXPECT_EQ(client.call(badFormat).error(), cudaErrorInvalidValue);
  v1::CallRequest threeChannels = createArray(8, 8);
  threeChannels.mutable_array_texture()->mutable_shape()->set_channels(3);
  EXPECT_EQ(client.call(threeChannels).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(createArray(8, 8, 0, CUDA_ARRAY3D_SPARSE)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(createArray(1ull << 40, 1)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(createArray(8, 4, 6, CUDA_ARRAY3D_CUBEMAP)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(createArray(8, 8, 6, CUDA_ARRAY3D_CUBEMAP)).error(), 0);
  EXPECT_EQ(client.call(createArray(8, 8, 3, CUDA_ARRAY3D_LAYERED)).error(), 0);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kArrayCreate), 2u);
}

TEST_F(ArrayTextureTest, ADeviceResetDestroysArraysAndObjects) {
  TestClient client = worker.attach(1);
  const std::uint64_t array = makeArray(client, createArray(8, 8));
  ASSERT_EQ(client.call(arrayObject(v1::ArrayTexture::TEXTURE_CREATE, array)).error(), 0);
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker.gpu().liveArrays(), 0u);
  EXPECT_EQ(worker.gpu().liveObjects(), 0u);
  EXPECT_EQ(worker.memory().driverCharge(1, memmgr::DriverShare::kArrays), 0u);
  EXPECT_EQ(client.call(arrayToHost(array, 32, 8)).error(), cudaErrorInvalidResourceHandle);
  expectNoMisuse();
}

}  // namespace
}  // namespace agileos::worker::testing
