#include "client/session/array_calls.h"

#include "client/session/worker_calls.h"

namespace agileos::client {

cudaError_t createArrayOnWorker(const ArrayInfo& info, CUarray_format format, unsigned channels,
                                std::uint64_t* token) {
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(info.levels == 0 ? v1::ArrayTexture::ARRAY_CREATE : v1::ArrayTexture::MIPMAPPED_CREATE);
  args->set_levels(info.levels);
  v1::ArrayDescriptor* shape = args->mutable_shape();
  shape->set_width(info.extent.width);
  shape->set_height(info.extent.height);
  shape->set_depth(info.extent.depth);
  shape->set_format(format);
  shape->set_channels(channels);
  shape->set_flags(info.flags);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  *token = reply.array_texture_result().array();
  ArrayRegistry::instance().addArray(*token, info);
  return cudaSuccess;
}

cudaError_t destroyArrayOnWorker(std::uint64_t token) {
  if (token == 0) return cudaSuccess;
  v1::CallRequest request;
  request.mutable_array_texture()->set_step(v1::ArrayTexture::ARRAY_DESTROY);
  request.mutable_array_texture()->set_array(token);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) ArrayRegistry::instance().forgetArray(token);
  return error;
}

cudaError_t mipmapLevelOnWorker(std::uint64_t token, unsigned level, std::uint64_t* levelToken) {
  const std::optional<ArrayInfo> parent = ArrayRegistry::instance().array(token);
  if (!parent || parent->levels == 0) return cudaErrorInvalidResourceHandle;
  v1::CallRequest request;
  request.mutable_array_texture()->set_step(v1::ArrayTexture::MIPMAP_LEVEL);
  request.mutable_array_texture()->set_array(token);
  request.mutable_array_texture()->set_level(level);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  const v1::ArrayDescriptor& shape = reply.array_texture_result().shape();
  ArrayInfo info = *parent;
  info.levels = 0;
  info.extent = cudaExtent{shape.width(), shape.height(), shape.depth()};
  *levelToken = reply.array_texture_result().array();
  ArrayRegistry::instance().addArray(*levelToken, info);
  return cudaSuccess;
}

cudaError_t createObjectOnWorker(const v1::CallRequest& request, std::uint64_t* object) {
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  *object = reply.array_texture_result().object();
  return cudaSuccess;
}

cudaError_t destroyObjectOnWorker(std::uint64_t object, v1::ArrayTexture::Step step) {
  v1::CallRequest request;
  request.mutable_array_texture()->set_step(step);
  request.mutable_array_texture()->set_object(object);
  v1::CallReply reply;
  return invoke(request, &reply);
}

}  // namespace agileos::client
