#include "net/resolver.h"

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

namespace ward::net {
namespace {

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

// A lookup function the test controls: counts calls, can hold them until released.
struct Lookup {
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false;
  std::atomic<int> calls{0};
  std::map<std::string, std::vector<IpAddress>> table;

  SystemResolverOptions Options() {
    SystemResolverOptions o;
    o.lookup = [this](const std::string& name) -> Result<std::vector<IpAddress>> {
      calls++;
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !hold; });
      auto it = table.find(name);
      if (it == table.end()) return Status(Code::kNotFound, name + ": no such host");
      return it->second;
    };
    return o;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      hold = false;
    }
    cv.notify_all();
  }
};

// Runs the io_context until `n` callbacks arrived (or a timeout).
struct Collector {
  std::vector<Result<std::vector<IpAddress>>> results;
  Resolver::Callback Cb() {
    return [this](Result<std::vector<IpAddress>> r) { results.push_back(std::move(r)); };
  }
  void RunUntil(asio::io_context& ctx, size_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (results.size() < n && std::chrono::steady_clock::now() < deadline) {
      ctx.restart();
      ctx.run_for(std::chrono::milliseconds(10));
    }
  }
};

TEST(ResolverTest, OverridesAnswerWithoutALookupAndNeverInline) {
  asio::io_context ctx;
  Lookup lookup;
  SystemResolverOptions o = lookup.Options();
  o.overrides["Dev.Test."] = {Ip("127.0.0.1")};  // normalised on construction
  auto r = MakeSystemResolver(ctx, std::move(o));
  Collector c;
  bool returned = false;
  r->Resolve("dev.test", [&](Result<std::vector<IpAddress>> res) {
    EXPECT_TRUE(returned) << "the callback ran inside Resolve()";
    c.results.push_back(std::move(res));
  });
  returned = true;
  c.RunUntil(ctx, 1);
  ASSERT_EQ(c.results.size(), 1u);
  ASSERT_TRUE(c.results[0].ok());
  EXPECT_EQ(*c.results[0], std::vector<IpAddress>{Ip("127.0.0.1")});
  EXPECT_EQ(lookup.calls, 0);
}

TEST(ResolverTest, ConcurrentRequestsShareOneLookupAndTheAnswerIsCached) {
  asio::io_context ctx;
  Lookup lookup;
  lookup.table["a.test"] = {Ip("192.0.2.1"), Ip("2001:db8::1")};
  lookup.hold = true;
  auto r = MakeSystemResolver(ctx, lookup.Options());
  Collector c;
  r->Resolve("a.test", c.Cb());
  r->Resolve("a.test", c.Cb());
  r->Resolve("a.test", c.Cb());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  lookup.Release();
  c.RunUntil(ctx, 3);
  ASSERT_EQ(c.results.size(), 3u);
  for (auto& res : c.results) {
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->size(), 2u);
  }
  EXPECT_EQ(lookup.calls, 1);
  r->Resolve("a.test", c.Cb());
  c.RunUntil(ctx, 4);
  EXPECT_EQ(lookup.calls, 1);  // from the cache
}

TEST(ResolverTest, NoCacheWithZeroTtlAndFailuresAreNotCached) {
  asio::io_context ctx;
  Lookup lookup;
  lookup.table["a.test"] = {Ip("192.0.2.1")};
  SystemResolverOptions o = lookup.Options();
  o.cache_ttl = std::chrono::milliseconds(0);
  auto r = MakeSystemResolver(ctx, std::move(o));
  Collector c;
  r->Resolve("a.test", c.Cb());
  c.RunUntil(ctx, 1);
  r->Resolve("a.test", c.Cb());
  c.RunUntil(ctx, 2);
  r->Resolve("gone.test", c.Cb());
  c.RunUntil(ctx, 3);
  r->Resolve("gone.test", c.Cb());
  c.RunUntil(ctx, 4);
  ASSERT_EQ(c.results.size(), 4u);
  EXPECT_EQ(lookup.calls, 4);
  EXPECT_EQ(c.results[2].status().code(), Code::kNotFound);
}

TEST(ResolverTest, TooManyPendingNamesAreRefusedNotQueued) {
  asio::io_context ctx;
  Lookup lookup;
  lookup.hold = true;
  SystemResolverOptions o = lookup.Options();
  o.max_pending = 2;
  o.threads = 1;
  auto r = MakeSystemResolver(ctx, std::move(o));
  Collector c;
  r->Resolve("a.test", c.Cb());
  r->Resolve("b.test", c.Cb());
  r->Resolve("c.test", c.Cb());
  c.RunUntil(ctx, 1);
  ASSERT_EQ(c.results.size(), 1u);
  EXPECT_EQ(c.results[0].status().code(), Code::kUnavailable);
  lookup.Release();
  c.RunUntil(ctx, 3);
  EXPECT_EQ(c.results.size(), 3u);
}

TEST(ResolverTest, DestroyingWithALookupInProgressDeliversNothingLater) {
  asio::io_context ctx;
  Lookup lookup;
  lookup.table["a.test"] = {Ip("192.0.2.1")};
  lookup.hold = true;
  Collector c;
  {
    auto r = MakeSystemResolver(ctx, lookup.Options());
    r->Resolve("a.test", c.Cb());
    while (lookup.calls == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      lookup.Release();
    });
    r.reset();  // joins the worker once the lookup returns
    release.join();
  }
  ctx.restart();
  ctx.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(c.results.empty());
}

TEST(ResolverTest, LookupHostReadsLocalhostWithoutTheNetwork) {
  std::ifstream hosts("/etc/hosts");
  std::string all((std::istreambuf_iterator<char>(hosts)), std::istreambuf_iterator<char>());
  if (all.find("localhost") == std::string::npos) GTEST_SKIP() << "no localhost in /etc/hosts";
  auto r = LookupHost("localhost");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool loopback = false;
  for (const IpAddress& a : *r) loopback |= a == Ip("127.0.0.1") || a == Ip("::1");
  EXPECT_TRUE(loopback);
}

TEST(ResolverTest, AddResolveOverride) {
  ResolverOverrides o;
  ASSERT_TRUE(AddResolveOverride("Dev.Test:127.0.0.1", &o).ok());
  ASSERT_TRUE(AddResolveOverride("dev.test:[::1],10.0.0.2", &o).ok());
  ASSERT_TRUE(AddResolveOverride("v6.test:::1", &o).ok());
  EXPECT_EQ(o["dev.test"], (std::vector<IpAddress>{Ip("127.0.0.1"), Ip("::1"), Ip("10.0.0.2")}));
  EXPECT_EQ(o["v6.test"], std::vector<IpAddress>{Ip("::1")});
  for (const char* bad : {"nohost", ":1.2.3.4", "h:", "h:not-an-ip", "h:1.2.3.4,",
                          "bad host:1.2.3.4", "h:127.1", "1.2.3.4:1.2.3.4"}) {
    ResolverOverrides x;
    EXPECT_FALSE(AddResolveOverride(bad, &x).ok()) << bad;
  }
}

}  // namespace
}  // namespace ward::net
