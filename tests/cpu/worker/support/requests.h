// Builders of CallRequests, one per operation, for the worker's tests and the
// worker request fuzzer. Header-only; no test framework.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agileos/v1/client_api.pb.h"

namespace agileos::worker::testing::requests {

namespace v1 = ::agileos::v1;

inline v1::CallRequest getDeviceInfo() {
  v1::CallRequest r;
  r.mutable_get_device_info();
  return r;
}
inline v1::CallRequest deviceSynchronize() {
  v1::CallRequest r;
  r.mutable_device_synchronize();
  return r;
}
inline v1::CallRequest deviceReset() {
  v1::CallRequest r;
  r.mutable_device_reset();
  return r;
}
inline v1::CallRequest deviceGetLimit(int limit) {
  v1::CallRequest r;
  r.mutable_device_get_limit()->set_limit(limit);
  return r;
}
inline v1::CallRequest deviceSetLimit(int limit, std::uint64_t value) {
  v1::CallRequest r;
  r.mutable_device_set_limit()->set_limit(limit);
  r.mutable_device_set_limit()->set_value(value);
  return r;
}
inline v1::CallRequest deviceGetCacheConfig() {
  v1::CallRequest r;
  r.mutable_device_get_cache_config();
  return r;
}
inline v1::CallRequest deviceSetCacheConfig(int config) {
  v1::CallRequest r;
  r.mutable_device_set_cache_config()->set_config(config);
  return r;
}

inline v1::CallRequest memAlloc(std::uint64_t size) {
  v1::CallRequest r;
  r.mutable_mem_alloc()->set_size(size);
  return r;
}
inline v1::CallRequest memFree(std::uint64_t dptr) {
  v1::CallRequest r;
  r.mutable_mem_free()->set_dptr(dptr);
  return r;
}
inline v1::CallRequest memGetInfo() {
  v1::CallRequest r;
  r.mutable_mem_get_info();
  return r;
}
// One chunk [offset, offset + data.size()) of a copy of total_size bytes to dst.
inline v1::CallRequest memcpyHtoDChunk(std::uint64_t dst, std::uint64_t totalSize, std::uint64_t offset,
                                       std::string data, std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_htod();
  m->set_dst(dst);
  m->set_total_size(totalSize);
  m->set_offset(offset);
  m->set_data(std::move(data));
  m->set_stream(stream);
  m->set_async(async);
  return r;
}
inline v1::CallRequest memcpyHtoD(std::uint64_t dst, std::string data, std::uint64_t stream = 0,
                                  bool async = false) {
  const std::uint64_t size = data.size();
  return memcpyHtoDChunk(dst, size, 0, std::move(data), stream, async);
}
inline v1::CallRequest memcpyDtoHChunk(std::uint64_t src, std::uint64_t totalSize, std::uint64_t offset,
                                       std::uint64_t size, std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_dtoh();
  m->set_src(src);
  m->set_total_size(totalSize);
  m->set_offset(offset);
  m->set_size(size);
  m->set_stream(stream);
  m->set_async(async);
  return r;
}
inline v1::CallRequest memcpyDtoH(std::uint64_t src, std::uint64_t size, std::uint64_t stream = 0,
                                  bool async = false) {
  return memcpyDtoHChunk(src, size, 0, size, stream, async);
}
inline v1::CallRequest memcpyDtoD(std::uint64_t dst, std::uint64_t src, std::uint64_t size,
                                  std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memcpy_dtod();
  m->set_dst(dst);
  m->set_src(src);
  m->set_size(size);
  m->set_stream(stream);
  m->set_async(async);
  return r;
}
inline v1::CallRequest memset(std::uint64_t dst, std::uint32_t value, std::uint64_t size,
                              std::uint64_t stream = 0, bool async = false) {
  v1::CallRequest r;
  auto* m = r.mutable_memset();
  m->set_dst(dst);
  m->set_value(value);
  m->set_size(size);
  m->set_stream(stream);
  m->set_async(async);
  return r;
}

inline v1::CallRequest streamCreate(std::uint32_t flags = 0, std::int32_t priority = 0) {
  v1::CallRequest r;
  r.mutable_stream_create()->set_flags(flags);
  r.mutable_stream_create()->set_priority(priority);
  return r;
}
inline v1::CallRequest streamDestroy(std::uint64_t stream) {
  v1::CallRequest r;
  r.mutable_stream_destroy()->set_stream(stream);
  return r;
}
inline v1::CallRequest streamSynchronize(std::uint64_t stream) {
  v1::CallRequest r;
  r.mutable_stream_synchronize()->set_stream(stream);
  return r;
}
inline v1::CallRequest streamQuery(std::uint64_t stream) {
  v1::CallRequest r;
  r.mutable_stream_query()->set_stream(stream);
  return r;
}
inline v1::CallRequest streamGetId(std::uint64_t stream) {
  v1::CallRequest r;
  r.mutable_stream_get_id()->set_stream(stream);
  return r;
}
inline v1::CallRequest streamWaitEvent(std::uint64_t stream, std::uint64_t event, std::uint32_t flags = 0) {
  v1::CallRequest r;
  r.mutable_stream_wait_event()->set_stream(stream);
  r.mutable_stream_wait_event()->set_event(event);
  r.mutable_stream_wait_event()->set_flags(flags);
  return r;
}

inline v1::CallRequest eventCreate(std::uint32_t flags = 0) {
  v1::CallRequest r;
  r.mutable_event_create()->set_flags(flags);
  return r;
}
inline v1::CallRequest eventDestroy(std::uint64_t event) {
  v1::CallRequest r;
  r.mutable_event_destroy()->set_event(event);
  return r;
}
inline v1::CallRequest eventRecord(std::uint64_t event, std::uint64_t stream = 0, std::uint32_t flags = 0) {
  v1::CallRequest r;
  r.mutable_event_record()->set_event(event);
  r.mutable_event_record()->set_stream(stream);
  r.mutable_event_record()->set_flags(flags);
  return r;
}
inline v1::CallRequest eventSynchronize(std::uint64_t event) {
  v1::CallRequest r;
  r.mutable_event_synchronize()->set_event(event);
  return r;
}
inline v1::CallRequest eventQuery(std::uint64_t event) {
  v1::CallRequest r;
  r.mutable_event_query()->set_event(event);
  return r;
}
inline v1::CallRequest eventElapsedTime(std::uint64_t start, std::uint64_t end) {
  v1::CallRequest r;
  r.mutable_event_elapsed_time()->set_start(start);
  r.mutable_event_elapsed_time()->set_end(end);
  return r;
}

inline v1::CallRequest moduleLoad(std::string fatbin, const std::vector<std::string>& functions,
                                  const std::vector<std::string>& variables) {
  v1::CallRequest r;
  auto* m = r.mutable_module_load();
  m->set_fatbin(std::move(fatbin));
  for (const std::string& name : functions) m->add_function_names(name);
  for (const std::string& name : variables) m->add_variable_names(name);
  return r;
}
inline v1::CallRequest moduleUnload(std::uint64_t module) {
  v1::CallRequest r;
  r.mutable_module_unload()->set_module(module);
  return r;
}
struct Dim {
  std::uint32_t x = 1, y = 1, z = 1;
};
inline v1::CallRequest launchKernel(std::uint64_t function, std::string params, Dim grid = {}, Dim block = {},
                                    std::uint64_t stream = 0, std::uint32_t sharedMemBytes = 0) {
  v1::CallRequest r;
  auto* m = r.mutable_launch_kernel();
  m->set_function(function);
  m->set_params(std::move(params));
  m->mutable_grid()->set_x(grid.x);
  m->mutable_grid()->set_y(grid.y);
  m->mutable_grid()->set_z(grid.z);
  m->mutable_block()->set_x(block.x);
  m->mutable_block()->set_y(block.y);
  m->mutable_block()->set_z(block.z);
  m->set_stream(stream);
  m->set_shared_mem_bytes(sharedMemBytes);
  return r;
}
inline v1::CallRequest cooperativeLaunch(std::uint64_t function, std::string params, Dim grid = {},
                                         Dim block = {}, std::uint64_t stream = 0) {
  v1::CallRequest r = launchKernel(function, std::move(params), grid, block, stream);
  r.mutable_launch_kernel()->set_cooperative(true);
  return r;
}
inline v1::CallRequest funcGetAttributes(std::uint64_t function) {
  v1::CallRequest r;
  r.mutable_func_get_attributes()->set_function(function);
  return r;
}
inline v1::CallRequest funcSetAttribute(std::uint64_t function, std::int32_t attribute, std::int32_t value) {
  v1::CallRequest r;
  r.mutable_func_set_attribute()->set_function(function);
  r.mutable_func_set_attribute()->set_attribute(attribute);
  r.mutable_func_set_attribute()->set_value(value);
  return r;
}
inline v1::CallRequest funcSetCacheConfig(std::uint64_t function, std::int32_t config) {
  v1::CallRequest r;
  r.mutable_func_set_cache_config()->set_function(function);
  r.mutable_func_set_cache_config()->set_config(config);
  return r;
}
inline v1::CallRequest occupancyMaxActiveBlocks(std::uint64_t function, std::int32_t blockSize,
                                                std::uint64_t dynamicSmem = 0, std::uint32_t flags = 0) {
  v1::CallRequest r;
  auto* m = r.mutable_occupancy_max_active_blocks();
  m->set_function(function);
  m->set_block_size(blockSize);
  m->set_dynamic_smem_bytes(dynamicSmem);
  m->set_flags(flags);
  return r;
}

}  // namespace agileos::worker::testing::requests
