#include "worker/adapters/nvrtc/nvrtc_wire.h"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace agileos::adapters::nvrtc {
namespace {

void put(std::string& out, std::string_view field) {
  const std::uint64_t size = field.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(field);
}

void putList(std::string& out, const std::vector<std::string>& list) {
  put(out, std::to_string(list.size()));
  for (const std::string& entry : list) put(out, entry);
}

std::optional<std::vector<std::string_view>> fieldsOf(std::string_view bytes) {
  std::vector<std::string_view> fields;
  while (!bytes.empty()) {
    std::uint64_t size = 0;
    if (bytes.size() < sizeof size) return std::nullopt;
    std::memcpy(&size, bytes.data(), sizeof size);
    bytes.remove_prefix(sizeof size);
    if (size > bytes.size()) return std::nullopt;
    fields.push_back(bytes.substr(0, size));
    bytes.remove_prefix(size);
  }
  return fields;
}

// A decimal number in [minimum, maximum], the whole field; nullopt otherwise.
std::optional<long long> number(std::string_view field, long long minimum, long long maximum) {
  long long value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size() || field.empty()) return std::nullopt;
  if (value < minimum || value > maximum) return std::nullopt;
  return value;
}

// Reads a count-prefixed list at fields[*at], advancing *at.
bool takeList(const std::vector<std::string_view>& fields, std::size_t* at, std::vector<std::string>* list) {
  if (*at >= fields.size()) return false;
  const auto count = number(fields[*at], 0, static_cast<long long>(fields.size() - *at - 1));
  if (!count) return false;
  ++*at;
  list->assign(fields.begin() + static_cast<std::ptrdiff_t>(*at),
               fields.begin() + static_cast<std::ptrdiff_t>(*at + static_cast<std::size_t>(*count)));
  *at += static_cast<std::size_t>(*count);
  return true;
}

}  // namespace

std::string encodeRequest(const CompileRequest& request) {
  std::string out;
  put(out, "agileos nvrtc request v1");
  put(out, request.source);
  put(out, request.name);
  putList(out, request.headers);
  putList(out, request.includeNames);
  putList(out, request.options);
  putList(out, request.expressions);
  return out;
}

std::optional<CompileRequest> decodeRequest(std::string_view bytes) {
  const auto fields = fieldsOf(bytes);
  if (!fields || fields->size() < 3 || (*fields)[0] != "agileos nvrtc request v1") return std::nullopt;
  CompileRequest request;
  request.source = (*fields)[1];
  request.name = (*fields)[2];
  std::size_t at = 3;
  for (auto* list : {&request.headers, &request.includeNames, &request.options, &request.expressions}) {
    if (!takeList(*fields, &at, list)) return std::nullopt;
  }
  if (at != fields->size() || request.headers.size() != request.includeNames.size()) return std::nullopt;
  return request;
}

std::string encodeResult(const CompileResult& result) {
  std::string out;
  put(out, std::to_string(static_cast<int>(result.status)));
  put(out, result.log);
  put(out, result.ptx);
  put(out, result.cubin);
  put(out, result.substitutePtx);
  putList(out, result.loweredNames);
  if (!result.ltoir.empty()) put(out, result.ltoir);
  return out;
}

std::optional<CompileResult> decodeResult(std::string_view bytes) {
  const auto fields = fieldsOf(bytes);
  if (!fields || fields->size() < 6) return std::nullopt;
  // nvrtcResult's codes are small and non-negative; anything else is not NVRTC's.
  const auto status = number((*fields)[0], 0, 255);
  if (!status) return std::nullopt;
  CompileResult result;
  result.status = static_cast<nvrtcResult>(*status);
  result.log = (*fields)[1];
  result.ptx = (*fields)[2];
  result.cubin = (*fields)[3];
  result.substitutePtx = (*fields)[4];
  std::size_t at = 5;
  if (!takeList(*fields, &at, &result.loweredNames)) return std::nullopt;
  if (at + 1 == fields->size()) result.ltoir = (*fields)[at++];
  if (at != fields->size()) return std::nullopt;
  return result;
}

}  // namespace agileos::adapters::nvrtc
