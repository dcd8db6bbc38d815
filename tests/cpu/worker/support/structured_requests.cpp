#include "tests/cpu/worker/support/structured_requests.h"

#include <algorithm>
#include <iterator>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/test_fatbins.h"

namespace agileos::worker::testing {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr int kMaxRepeatedNames = 4;
constexpr int kMaxNestingDepth = 2;

constexpr std::uint64_t kInterestingNumbers[] = {0,
                                                 1,
                                                 2,
                                                 255,
                                                 256,
                                                 4095,
                                                 4096,
                                                 4097,
                                                 1u << 20,
                                                 3u << 20,
                                                 (2u << 20) + 1,
                                                 64ull << 20,
                                                 (64ull << 20) + 1,
                                                 UINT32_MAX,
                                                 1ull << 32,
                                                 1ull << 40,
                                                 1ull << 63,
                                                 UINT64_MAX - 4096,
                                                 UINT64_MAX - 1,
                                                 UINT64_MAX};

const char* const kKnownNames[] = {kAddKernel,       kPairKernel,    kEmptyKernel,
                                   kCounterVariable, kTableVariable, kCoefficientsVariable};

// Number selectors (byte % 8).
enum NumberSelector : std::uint8_t {
  kSmall = 0,         // next byte % 16
  kTwoBytes = 1,      // next two bytes, little-endian
  kInteresting = 2,   // kInterestingNumbers[next byte % size]
  kRaw = 3,           // next eight bytes
  kRestOfCopy = 4,    // total_size - offset of this request (0 if none was read)
  kRoomMinusOne = 5,  // room - 1, room, room + 1: the bytes from the last pointer to the
  kRoom = 6,          //   end of its range (0 if the pointer was not taken from a range)
  kRoomPlusOne = 7,
};
// Pointer selectors (byte % 4); 0 and 1 read a range index byte and a signed delta byte.
enum PointerSelector : std::uint8_t {
  kNearStart = 0,
  kNearEnd = 1,
  kRawPointer = 2,
  kInterestingPointer = 3
};

const google::protobuf::OneofDescriptor* operations() {
  return v1::CallRequest::descriptor()->FindOneofByName("op");
}

bool isPointerField(const FieldDescriptor* field) {
  return field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 &&
         (field->name() == "dst" || field->name() == "src" || field->name() == "dptr");
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool empty() const { return bytes_.empty(); }
  std::uint8_t byte() {
    if (bytes_.empty()) return 0;
    const std::uint8_t value = bytes_.front();
    bytes_ = bytes_.subspan(1);
    return value;
  }
  std::uint64_t little(int count) {
    std::uint64_t value = 0;
    for (int i = 0; i < count; ++i) value |= std::uint64_t{byte()} << (8 * i);
    return value;
  }
  std::string take(std::size_t count) {
    count = std::min(count, bytes_.size());
    std::string out(reinterpret_cast<const char*>(bytes_.data()), count);
    bytes_ = bytes_.subspan(count);
    return out;
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

// What the decoder knows while it fills one request.
struct Context {
  std::vector<ScenarioAllocation> ranges;
  const std::string* fatbin = nullptr;
  std::uint64_t room = 0;  // from the last pointer to the end of its range
  std::uint64_t total = 0, offset = 0;
};

std::uint64_t interesting(ByteReader& in) {
  return kInterestingNumbers[in.byte() % std::size(kInterestingNumbers)];
}

std::uint64_t decodeNumber(ByteReader& in, const Context& context) {
  switch (in.byte() % 8) {
    case kSmall:
      return in.byte() % 16;
    case kTwoBytes:
      return in.little(2);
    case kInteresting:
      return interesting(in);
    case kRaw:
      return in.little(8);
    case kRestOfCopy:
      return context.total - context.offset;
    case kRoomMinusOne:
      return context.room - 1;
    case kRoom:
      return context.room;
    default:
      return context.room + 1;
  }
}

std::uint64_t decodePointer(ByteReader& in, Context& context) {
  context.room = 0;
  const std::uint8_t selector = in.byte() % 4;
  if (selector == kRawPointer) return in.little(8);
  if (selector == kInterestingPointer) return interesting(in);
  const ScenarioAllocation& range = context.ranges[in.byte() % context.ranges.size()];
  const auto delta = static_cast<std::uint64_t>(std::int64_t{static_cast<std::int8_t>(in.byte())});
  const std::uint64_t p = (selector == kNearStart ? range.base : range.base + range.size) + delta;
  if (p >= range.base && p <= range.base + range.size) context.room = range.base + range.size - p;
  return p;
}

std::uint64_t decodeToken(ByteReader& in) {
  const std::uint8_t selector = in.byte();
  if (selector % 4 == 3) return in.little(8);      // forged
  if (selector % 8 == 2) return selector % 3;      // a default-stream spelling: 0, 1 or 2
  return kFirstSymbol + in.byte() % kSymbolCount;  // a scenario handle
}

std::string decodeBytes(ByteReader& in, const Context& context) {
  switch (in.byte() % 4) {
    case 1: {  // the test fatbin, possibly cut short, with one byte changed
      std::string fatbin = *context.fatbin;
      if (const std::uint64_t cut = in.little(2); cut != 0 && cut < fatbin.size()) fatbin.resize(cut);
      if (!fatbin.empty()) fatbin[in.little(2) % fatbin.size()] ^= static_cast<char>(in.byte());
      return fatbin;
    }
    case 3:
      return *context.fatbin;
    default:
      return in.take(in.byte());
  }
}

std::string decodeName(ByteReader& in) {
  const std::uint8_t selector = in.byte();
  if (selector % 2 == 0) return kKnownNames[(selector / 2) % std::size(kKnownNames)];
  return in.take(in.byte());
}

// A repeated number (a texture description's address modes): neither decoded nor encoded, so the
// field stays empty (the worker takes an empty one as all zeros).
bool isRepeatedNumber(const FieldDescriptor* field) {
  return field->is_repeated() && field->cpp_type() != FieldDescriptor::CPPTYPE_STRING &&
         field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE;
}

void decodeFields(Message* message, ByteReader& in, Context& context, int depth) {
  const Descriptor* descriptor = message->GetDescriptor();
  const Reflection* reflection = message->GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (isRepeatedNumber(field)) continue;  // texture descriptions' modes and colours: left empty
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT64: {
        std::uint64_t value = 0;
        if (tokenKind(field)) {
          value = decodeToken(in);
        } else if (isPointerField(field)) {
          value = decodePointer(in, context);
        } else {
          value = decodeNumber(in, context);
          if (field->name() == "total_size") context.total = value;
          if (field->name() == "offset") context.offset = value;
        }
        reflection->SetUInt64(message, field, value);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(message, field, static_cast<std::uint32_t>(decodeNumber(in, context)));
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        reflection->SetInt32(message, field, static_cast<std::int32_t>(decodeNumber(in, context)));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        reflection->SetBool(message, field, (in.byte() & 1) != 0);
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        if (field->is_repeated() && field->type() == FieldDescriptor::TYPE_BYTES) {
          // Byte strings (a module's relocatable objects): each as a byte field, so the fuzzer can
          // offer the scenario's fatbin or any bytes.
          const int count = in.byte() % (kMaxRepeatedNames + 1);
          for (int n = 0; n < count; ++n) reflection->AddString(message, field, decodeBytes(in, context));
        } else if (field->is_repeated()) {
          const int count = in.byte() % (kMaxRepeatedNames + 1);
          for (int n = 0; n < count; ++n) reflection->AddString(message, field, decodeName(in));
        } else {
          reflection->SetString(message, field, decodeBytes(in, context));
        }
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        // A presence byte: odd means the nested message is there (an absent HostBuffer is
        // a copy with inline bytes, a present one a copy through shared memory).
        if (!field->is_repeated() && depth < kMaxNestingDepth && (in.byte() & 1) != 0) {
          decodeFields(reflection->MutableMessage(message, field), in, context, depth + 1);
        }
        break;
      default:
        break;  // requests carry no other field types
    }
  }
}

// The encoder of structuredTemplate: the same traversal, writing selectors that
// give a well-formed request.
void encodeTemplate(const Descriptor* descriptor, std::uint8_t rangeIndex, std::string* out, int depth) {
  bool hasTotal = false;
  for (int i = 0; i < descriptor->field_count(); ++i)
    hasTotal |= descriptor->field(i)->name() == "total_size";
  auto bytes = [out](std::initializer_list<int> values) {
    for (int value : values) out->push_back(static_cast<char>(value));
  };
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const std::string& name = field->name();
    if (isRepeatedNumber(field)) continue;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_INT32:
        if (tokenKind(field)) {
          bytes({0, 0});  // symbol 0
        } else if (isPointerField(field)) {
          bytes({kNearStart, rangeIndex, 0});
        } else if (name == "total_size") {
          bytes({kRoom});
        } else if (name == "offset") {
          bytes({kSmall, 0});
        } else if (name == "size" && depth == 0 && descriptor->FindFieldByName("dptr") == nullptr &&
                   (descriptor->FindFieldByName("dst") != nullptr ||
                    descriptor->FindFieldByName("src") != nullptr)) {
          bytes({hasTotal ? kRestOfCopy : kRoom});
        } else if (name == "size" || name == "block_size") {
          bytes({kTwoBytes, 0x00, 0x01});  // 256
        } else {
          bytes({kSmall, 1});
        }
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        bytes({0});
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        if (name == "function_names") {
          bytes({3, 0, 2, 4});  // the three kernels
        } else if (name == "variable_names") {
          bytes({3, 6, 8, 10});  // the three variables
        } else if (name == "managed_variable_names") {
          bytes({0});  // none: the test fatbins' modules have no __managed__ variables
        } else if (name == "fatbin") {
          bytes({3});
        } else if (field->is_repeated()) {
          bytes({0});  // none (relocatable_objects: a module that was not separately compiled)
        } else if (name == "params") {
          bytes({0, static_cast<int>(kAddKernelParamBytes)});  // symbol 0 is the add kernel
          out->append(kAddKernelParamBytes, '\0');
        } else {
          bytes({0, 64});
          out->append(64, 'd');
        }
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (!field->is_repeated() && depth < kMaxNestingDepth) {
          // Templates are the gRPC shape: copies carry their bytes inline (no HostBuffer).
          const bool present = field->message_type()->name() != "HostBuffer";
          bytes({present ? 1 : 0});
          if (present) encodeTemplate(field->message_type(), rangeIndex, out, depth + 1);
        }
        break;
      default:
        break;
    }
  }
}

// The operation byte b names operation b >> 3, except that 31 (kExtendedOperations)
// takes the next byte n and names operation 31 + n, so more than 32 operations fit.
// Either is reduced modulo the number of operations.
constexpr int kExtendedOperations = 31;

int operationIndex(ByteReader& in) {
  int index = in.byte() >> 3;
  if (index == kExtendedOperations) index += in.byte();
  return index % operations()->field_count();
}

}  // namespace

std::vector<ScenarioAllocation> structuredPointerTargets(const FuzzScenario& scenario) {
  std::vector<ScenarioAllocation> ranges;
  for (const ScenarioClient* client : {&scenario.fuzzed(), &scenario.victim()}) {
    ranges.insert(ranges.end(), client->allocations.begin(), client->allocations.end());
    ranges.insert(ranges.end(), client->variables.begin(), client->variables.end());
  }
  ranges.push_back({scenario.fuzzed().freed, 256});
  for (const memmgr::Region& region : {memmgr::kIoAperture, memmgr::kModuleRange, memmgr::kUserRange}) {
    ranges.push_back({region.begin, region.size});
  }
  return ranges;
}

std::optional<HandleKind> tokenKind(const FieldDescriptor* field) {
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_UINT64) return std::nullopt;
  const std::string& name = field->name();
  if (name == "stream") return HandleKind::kStream;
  if (name == "event" || name == "start" || name == "end") return HandleKind::kEvent;
  if (name == "module") return HandleKind::kModule;
  if (name == "function") return HandleKind::kFunction;
  return std::nullopt;
}

void resolveSymbols(Message* message, const FuzzScenario& scenario) {
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_repeated()) {
      resolveSymbols(reflection->MutableMessage(message, field), scenario);
      continue;
    }
    const auto kind = tokenKind(field);
    if (!kind || field->is_repeated()) continue;
    const std::uint64_t value = reflection->GetUInt64(*message, field);
    if (value < kFirstSymbol || value >= kFirstSymbol + kSymbolCount) continue;
    const std::vector<std::uint64_t> handles = scenario.handles(*kind);
    if (!handles.empty())
      reflection->SetUInt64(message, field, handles[(value - kFirstSymbol) % handles.size()]);
  }
}

std::vector<v1::CallRequest> decodeStructuredRequests(std::span<const std::uint8_t> bytes,
                                                      const FuzzScenario& scenario, const std::string& fatbin,
                                                      std::size_t maxRequests) {
  ByteReader in(bytes);
  const std::vector<ScenarioAllocation> ranges = structuredPointerTargets(scenario);
  std::vector<v1::CallRequest> requests;
  while (!in.empty() && requests.size() < maxRequests) {
    const FieldDescriptor* op = operations()->field(operationIndex(in));
    Context context{ranges, &fatbin};
    v1::CallRequest& request = requests.emplace_back();
    decodeFields(request.GetReflection()->MutableMessage(&request, op), in, context, 0);
  }
  return requests;
}

int structuredOperationCount() { return operations()->field_count(); }

int structuredOperationIndex(const std::string& name) {
  for (int i = 0; i < operations()->field_count(); ++i) {
    if (operations()->field(i)->name() == name) return i;
  }
  return -1;
}

std::string structuredTemplate(int op, std::uint8_t rangeIndex) {
  std::string out(1, static_cast<char>((std::min(op, kExtendedOperations) << 3) | 7));
  if (op >= kExtendedOperations) out.push_back(static_cast<char>(op - kExtendedOperations));
  encodeTemplate(operations()->field(op % structuredOperationCount())->message_type(), rangeIndex, &out, 0);
  return out;
}

}  // namespace agileos::worker::testing
