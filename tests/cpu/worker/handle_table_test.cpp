// HandleTable: the per-client token tables of worker/handle_table.h.
#include "worker/handle_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

namespace agileos::worker {
namespace {

TEST(HandleTable, TokensAreNeverDefaultStreamValuesAndAreUnique) {
  HandleTable<int> table;
  std::set<Token> seen;
  for (int i = 0; i < 20000; ++i) {
    const Token token = table.insert(i);
    EXPECT_GT(token, 2u) << "0, 1 and 2 are CUDA's default stream handles";
    EXPECT_TRUE(seen.insert(token).second) << "duplicate token " << token;
  }
  EXPECT_EQ(table.size(), 20000u);
}

TEST(HandleTable, FindReturnsWhatWasInsertedAndUnknownTokensFindNothing) {
  HandleTable<std::string> table;
  const Token token = table.insert("stream");
  ASSERT_TRUE(table.find(token).has_value());
  EXPECT_EQ(*table.find(token), "stream");
  for (Token forged : {Token{0}, Token{1}, Token{2}, token + 1, token - 1, ~token}) {
    EXPECT_FALSE(table.find(forged).has_value()) << forged;
  }
}

TEST(HandleTable, EraseMakesATokenStaleForever) {
  HandleTable<int> table;
  const Token token = table.insert(1);
  EXPECT_EQ(table.erase(token), 1);
  EXPECT_FALSE(table.find(token).has_value());
  EXPECT_FALSE(table.erase(token).has_value()) << "erased twice";
  EXPECT_FALSE(table.replace(token, 2));
  for (int i = 0; i < 20000; ++i) ASSERT_NE(table.insert(i), token) << "a stale token was minted again";
  EXPECT_FALSE(table.find(token).has_value());
}

TEST(HandleTable, ReplaceSnapshotAndDrain) {
  HandleTable<int> table;
  const Token a = table.insert(1);
  const Token b = table.insert(2);
  EXPECT_TRUE(table.replace(a, 10));
  EXPECT_EQ(*table.find(a), 10);
  EXPECT_EQ(table.snapshot().size(), 2u);
  EXPECT_EQ(table.size(), 2u);
  const auto drained = table.drain();
  EXPECT_EQ(drained.size(), 2u);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.find(b).has_value());
}

TEST(HandleTable, TablesMintIndependentTokens) {
  // Each table draws from its own randomly seeded generator: a token of one
  // client's table says nothing about another's.
  HandleTable<int> first, second;
  std::set<Token> firstTokens;
  for (int i = 0; i < 1000; ++i) firstTokens.insert(first.insert(i));
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(firstTokens.contains(second.insert(i)));
}

TEST(HandleTable, ConcurrentInsertsYieldUniqueTokens) {
  HandleTable<int> table;
  std::vector<std::vector<Token>> minted(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) minted[t].push_back(table.insert(i));
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<Token> all;
  for (const auto& tokens : minted) all.insert(tokens.begin(), tokens.end());
  EXPECT_EQ(all.size(), 20000u);
  EXPECT_EQ(table.size(), 20000u);
}

}  // namespace
}  // namespace agileos::worker
