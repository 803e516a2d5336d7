#include "kube/rest/client.h"

#include <atomic>
#include <mutex>

#include "gtest/gtest.h"
#include "kube/rest/testing/fake_http_server.h"

namespace spiderpool::kube {
namespace {

using base::Json;
using testing::FakeHttpServer;

struct WidgetSpec {
  std::string color;
  int64_t size = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("color", color);
    v.Field("size", size);
  }
};

struct Widget {
  SP_API_OBJECT_HEAD(Widget)
  WidgetSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

const api::ResourceInfo& Widget::Resource() {
  static const api::ResourceInfo info{.group = "example.io", .version = "v1", .kind = "Widget",
                                      .plural = "widgets", .singular = "widget",
                                      .namespaced = true, .has_status = true};
  return info;
}

std::shared_ptr<RestClient> MustCreate(const FakeHttpServer& s) {
  Config c;
  c.server = s.url();
  c.qps = -1;
  auto r = RestClient::Create(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

Json ParseOrDie(const std::string& text) {
  auto j = base::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

constexpr char kCollection[] = "/apis/example.io/v1/namespaces/ns/widgets";

TEST(DynamicClientTest, ListAllFollowsContinueTokens) {
  FakeHttpServer s;
  std::vector<std::string> continues;
  std::mutex mu;
  s.server().Get(kCollection, [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(req.get_param_value("limit"), "2");
    std::string cont = req.get_param_value("continue");
    continues.push_back(cont);
    Json list = {{"kind", "WidgetList"}, {"apiVersion", "example.io/v1"},
                 {"metadata", {{"resourceVersion", "42"}}}, {"items", Json::array()}};
    int first = cont.empty() ? 0 : std::stoi(cont);
    for (int i = first; i < std::min(first + 2, 5); ++i) {
      list["items"].push_back({{"metadata", {{"name", "w" + std::to_string(i)}}}});
    }
    if (first + 2 < 5) {
      list["metadata"]["continue"] = std::to_string(first + 2);
      list["metadata"]["remainingItemCount"] = 5 - first - 2;
    }
    res.set_content(base::DumpJson(list), "application/json");
  });
  DynamicClient widgets(MustCreate(s), Widget::Resource());
  absl::StatusOr<Json> all = widgets.ListAll("ns", {.limit = 2});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ((*all)["items"].size(), 5u);
  EXPECT_EQ((*all)["items"][4]["metadata"]["name"], "w4");
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "42");
  EXPECT_FALSE((*all)["metadata"].contains("continue"));
  EXPECT_EQ(continues, (std::vector<std::string>{"", "2", "4"}));

  // Typed.
  Client<Widget> typed(widgets.rest());
  absl::StatusOr<api::List<Widget>> list = typed.ListAll("ns", {.limit = 2});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 5u);
  EXPECT_EQ(list->metadata.resource_version, "42");
}

TEST(DynamicClientTest, ListAllRestartsWhenContinueExpires) {
  FakeHttpServer s;
  std::atomic<int> calls{0};
  s.server().Get(kCollection, [&](const httplib::Request& req, httplib::Response& res) {
    int n = ++calls;
    std::string cont = req.get_param_value("continue");
    if (n == 2) {  // the first continue token has expired
      EXPECT_EQ(cont, "c1");
      res.status = 410;
      res.set_content(R"({"kind":"Status","metadata":{},"reason":"Expired","code":410})",
                      "application/json");
      return;
    }
    Json list = {{"metadata", {{"resourceVersion", std::to_string(n)}}},
                 {"items", Json::array()}};
    if (cont.empty()) {
      list["items"].push_back({{"metadata", {{"name", "a"}}}});
      list["metadata"]["continue"] = "c1";
    } else {
      list["items"].push_back({{"metadata", {{"name", "b"}}}});
    }
    res.set_content(base::DumpJson(list), "application/json");
  });
  DynamicClient widgets(MustCreate(s), Widget::Resource());
  absl::StatusOr<Json> all = widgets.ListAll("ns", {.limit = 1});
  ASSERT_TRUE(all.ok()) << all.status();
  // Calls: page1, expired, page1 again, page2.
  EXPECT_EQ(calls.load(), 4);
  ASSERT_EQ((*all)["items"].size(), 2u);
  EXPECT_EQ((*all)["items"][0]["metadata"]["name"], "a");
  EXPECT_EQ((*all)["items"][1]["metadata"]["name"], "b");
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "3");
}

TEST(DynamicClientTest, WritesUseObjectMetadataAndOptions) {
  FakeHttpServer s;
  std::mutex mu;
  std::vector<std::string> log;
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(req.method + " " + req.target + " " +
                  req.get_header_value("Content-Type") + " " + req.body);
    res.set_content(
        R"({"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns",)"
        R"("resourceVersion":"9"},"spec":{"color":"red"}})",
        "application/json");
  };
  s.server().Post(kCollection, record);
  s.server().Put(std::string(kCollection) + "/w", record);
  s.server().Put(std::string(kCollection) + "/w/status", record);
  s.server().Patch(std::string(kCollection) + "/w", record);
  s.server().Patch(std::string(kCollection) + "/w/status", record);
  s.server().Delete(std::string(kCollection) + "/w", record);

  Client<Widget> widgets(MustCreate(s));
  Widget w;
  w.metadata.name = "w";
  w.metadata.namespace_ = "ns";
  w.spec.color = "red";
  absl::StatusOr<Widget> created = widgets.Create(w, {.dry_run = true, .field_manager = "me"});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata.resource_version, "9");
  EXPECT_EQ(created->spec.color, "red");
  ASSERT_TRUE(widgets.Update(w).ok());
  ASSERT_TRUE(widgets.UpdateStatus(w).ok());
  ASSERT_TRUE(widgets.Patch("ns", "w", PatchType::kMerge, {{"spec", {{"size", 3}}}}).ok());
  ASSERT_TRUE(widgets
                  .Patch("ns", "w", PatchType::kJson,
                         Json::array({{{"op", "add"}, {"path", "/status"}, {"value", 1}}}),
                         {.subresource = "status"})
                  .ok());
  DeleteOptions del;
  del.precondition_uid = "u-1";
  del.precondition_resource_version = "9";
  del.propagation_policy = "Foreground";
  del.grace_period_seconds = 0;
  ASSERT_TRUE(widgets.Delete("ns", "w", del).ok());

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(log.size(), 6u);
  EXPECT_EQ(log[0],
            "POST /apis/example.io/v1/namespaces/ns/widgets?dryRun=All&fieldManager=me&timeout=30s "
            "application/json "
            R"({"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w",)"
            R"("namespace":"ns"},"spec":{"color":"red"}})");
  EXPECT_EQ(log[1].substr(0, log[1].find(' ', 4)), "PUT /apis/example.io/v1/namespaces/ns/widgets/w?timeout=30s");
  EXPECT_EQ(log[2].substr(0, log[2].find(' ', 4)),
            "PUT /apis/example.io/v1/namespaces/ns/widgets/w/status?timeout=30s");
  EXPECT_EQ(log[3],
            "PATCH /apis/example.io/v1/namespaces/ns/widgets/w?timeout=30s "
            "application/merge-patch+json "
            R"({"spec":{"size":3}})");
  EXPECT_EQ(log[4].substr(0, log[4].find(' ', 6) + 28),
            "PATCH /apis/example.io/v1/namespaces/ns/widgets/w/status?timeout=30s "
            "application/json-patch+json");
  Json del_body = ParseOrDie(log[5].substr(log[5].find('{')));
  EXPECT_EQ(del_body["kind"], "DeleteOptions");
  EXPECT_EQ(del_body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(del_body["preconditions"]["resourceVersion"], "9");
  EXPECT_EQ(del_body["propagationPolicy"], "Foreground");
  EXPECT_EQ(del_body["gracePeriodSeconds"], 0);
}

TEST(DynamicClientTest, NamespacedObjectsNeedANamespace) {
  FakeHttpServer s;
  Client<Widget> widgets(MustCreate(s));
  Widget w;
  w.metadata.name = "w";
  EXPECT_EQ(widgets.Create(w).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(widgets.Delete("", "w").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(widgets.Get("ns", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DynamicClientTest, UndecodableAnswerIsDataLoss) {
  FakeHttpServer s;
  s.server().Get(std::string(kCollection) + "/w",
                 [&](const httplib::Request&, httplib::Response& res) {
                   res.set_content(R"({"metadata":{"name":"w"},"spec":{"size":"big"}})",
                                   "application/json");
                 });
  Client<Widget> widgets(MustCreate(s));
  absl::StatusOr<Widget> w = widgets.Get("ns", "w");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kDataLoss) << w.status();
  EXPECT_NE(std::string(w.status().message()).find("spec.size"), std::string::npos);
}

TEST(RetryTest, RetryOnConflictRetriesOnlyConflicts) {
  base::SimulatedClock clock;
  std::atomic<int> calls{0};
  std::jthread advancer([&](std::stop_token st) {
    while (!st.stop_requested()) {
      if (clock.WaitForSleepers(1, absl::Milliseconds(5))) clock.Advance(absl::Milliseconds(20));
    }
  });
  // Succeeds on the third call.
  absl::Status s = RetryOnConflict(DefaultRetry(), [&] {
    return ++calls < 3 ? MakeApiError(409, "Conflict", "modified") : absl::OkStatus();
  }, clock);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(calls.load(), 3);

  // Always conflicting: exactly `steps` calls, the conflict is returned.
  calls = 0;
  s = RetryOnConflict(DefaultRetry(), [&] {
    ++calls;
    return MakeApiError(409, "Conflict", "modified");
  }, clock);
  EXPECT_TRUE(kube::IsConflict(s));
  EXPECT_EQ(calls.load(), 5);

  // Other errors are returned at once.
  calls = 0;
  s = RetryOnConflict(DefaultRetry(), [&] {
    ++calls;
    return MakeApiError(404, "NotFound", "gone");
  }, clock);
  EXPECT_TRUE(kube::IsNotFound(s));
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace spiderpool::kube
