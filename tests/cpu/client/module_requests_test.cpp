// AGILEOS_MODULES parsing (client/common/daemon_session.h): what the client puts in its Hello.
// The daemon validates every request; the client only splits the variable.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "client/common/daemon_session.h"

namespace agileos::client {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs parsed(std::string_view text) {
  Pairs out;
  for (const v1::ModuleRequest& request : parseModuleRequests(text))
    out.emplace_back(request.name(), request.version());
  return out;
}

TEST(ModuleRequests, NamesWithAndWithoutRequirements) {
  EXPECT_EQ(parsed("kvstore@^1.2;storage"), (Pairs{{"kvstore", "^1.2"}, {"storage", ""}}));
  EXPECT_EQ(parsed("queue"), (Pairs{{"queue", ""}}));
}

TEST(ModuleRequests, ARequirementMayHoldCommas) {
  EXPECT_EQ(parsed("kv@>=1,<2;q@~1.0"), (Pairs{{"kv", ">=1,<2"}, {"q", "~1.0"}}));
}

TEST(ModuleRequests, BlanksAndEmptyEntriesAreDropped) {
  EXPECT_TRUE(parsed("").empty());
  EXPECT_TRUE(parsed(" ; ;").empty());
  EXPECT_EQ(parsed(" kv @ ^1 ;; q ;"), (Pairs{{"kv", "^1"}, {"q", ""}}));
}

// Fail closed: whatever is not a plain entry goes to the daemon as written, which refuses it.
TEST(ModuleRequests, MalformedEntriesAreSentAsWritten) {
  EXPECT_EQ(parsed("@^1"), (Pairs{{"", "^1"}}));
  EXPECT_EQ(parsed("kv@1@2"), (Pairs{{"kv", "1@2"}}));
  EXPECT_EQ(parsed("Key Value@"), (Pairs{{"Key Value", ""}}));
}

TEST(MemoryQuota, BytesOrABinarySuffix) {
  EXPECT_EQ(parseMemoryQuota("4096"), 4096u);
  EXPECT_EQ(parseMemoryQuota(" 8G "), 8ull << 30);
  EXPECT_EQ(parseMemoryQuota("8GiB"), 8ull << 30);
  EXPECT_EQ(parseMemoryQuota("512M"), 512ull << 20);
  EXPECT_EQ(parseMemoryQuota("3K"), 3072u);
  EXPECT_EQ(parseMemoryQuota("1T"), 1ull << 40);
  for (const char* bad :
       {"", "0", "0G", "-1", "8g", "8 G", "1.5G", "G", "8GB", "99999999999999999999", "17179869184T"}) {
    EXPECT_FALSE(parseMemoryQuota(bad)) << bad;
  }
}

}  // namespace
}  // namespace agileos::client
