#include "kube/rest/watch.h"

#include "gtest/gtest.h"

namespace spiderpool::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a{b}","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"metadata":{"name":"q\"}\\","resourceVersion":"2"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}})"
    "\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"[x","resourceVersion":"4"}}})"
    "\n";

std::vector<WatchEvent> DecodeAll(const std::vector<std::string>& chunks) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> events;
  for (const std::string& c : chunks) {
    absl::Status s = d.Feed(c, &events);
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_TRUE(d.Idle());
  return events;
}

void ExpectStream(const std::vector<WatchEvent>& events) {
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(events[0].object["metadata"]["name"], "a{b}");
  EXPECT_EQ(events[1].type, WatchEventType::kModified);
  EXPECT_EQ(events[1].object["metadata"]["name"], "q\"}\\");
  EXPECT_EQ(events[2].type, WatchEventType::kBookmark);
  EXPECT_EQ(events[3].type, WatchEventType::kDeleted);
  EXPECT_EQ(events[3].object["metadata"]["resourceVersion"], "4");
}

TEST(WatchDecoderTest, WholeStreamInOneChunk) { ExpectStream(DecodeAll({kStream})); }

TEST(WatchDecoderTest, EverySplitPoint) {
  for (size_t i = 0; i <= kStream.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectStream(DecodeAll({kStream.substr(0, i), kStream.substr(i)}));
  }
}

TEST(WatchDecoderTest, ByteByByte) {
  std::vector<std::string> chunks;
  for (char c : kStream) chunks.emplace_back(1, c);
  ExpectStream(DecodeAll(chunks));
}

TEST(WatchDecoderTest, ObjectsWithoutNewlinesAndPrettyPrinted) {
  std::string s = R"({"type":"ADDED","object":{}}{"type":"DELETED","object":{}})"
                  "\n\n  {\n  \"type\": \"MODIFIED\",\n  \"object\": {\"a\": [1, {\"b\": 2}]}\n}";
  std::vector<WatchEvent> events = DecodeAll({s});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].type, WatchEventType::kModified);
  EXPECT_EQ(events[2].object["a"][1]["b"], 2);
}

TEST(WatchDecoderTest, PartialObjectIsNotIdle) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> events;
  ASSERT_TRUE(d.Feed(R"({"type":"ADDED","obj)", &events).ok());
  EXPECT_TRUE(events.empty());
  EXPECT_FALSE(d.Idle());
}

TEST(WatchDecoderTest, ErrorEventDecodes) {
  std::vector<WatchEvent> events = DecodeAll(
      {R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kError);
  EXPECT_EQ(events[0].object["code"], 410);
}

TEST(WatchDecoderTest, CorruptStreams) {
  auto fails = [](std::string_view s) {
    WatchStreamDecoder d;
    std::vector<WatchEvent> events;
    return !d.Feed(s, &events).ok();
  };
  EXPECT_TRUE(fails("garbage"));
  EXPECT_TRUE(fails(R"([{"type":"ADDED","object":{}}])"));
  EXPECT_TRUE(fails(R"({"type":"ADDED"})"));                       // no object
  EXPECT_TRUE(fails(R"({"type":"SOMETHING","object":{}})"));       // unknown type
  EXPECT_TRUE(fails(R"({"type":1,"object":{}})"));                 // type not a string
  EXPECT_TRUE(fails(R"({"type":"ADDED","object":"x"})"));          // object not an object
  EXPECT_TRUE(fails(R"({"type":"ADDED","object":{]})"));           // framed but not JSON
  // An error is permanent.
  WatchStreamDecoder d;
  std::vector<WatchEvent> events;
  EXPECT_FALSE(d.Feed("x", &events).ok());
  EXPECT_FALSE(d.Feed(R"({"type":"ADDED","object":{}})", &events).ok());
}

TEST(WatchDecoderTest, EventsBeforeAnErrorAreDelivered) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> events;
  EXPECT_FALSE(d.Feed(R"({"type":"ADDED","object":{}} nonsense)", &events).ok());
  EXPECT_EQ(events.size(), 1u);
}

TEST(WatchDecoderTest, ObjectSizeLimit) {
  JsonObjectFramer f(/*max_object_bytes=*/64);
  std::vector<std::string> objects;
  ASSERT_TRUE(f.Feed(R"({"a":"short"})", &objects).ok());
  EXPECT_EQ(objects.size(), 1u);
  absl::Status s = f.Feed("{\"a\":\"" + std::string(100, 'x'), &objects);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
}

TEST(WatchDecoderTest, ManySmallObjectsInOneChunkDoNotRecurse) {
  std::string s;
  for (int i = 0; i < 200000; ++i) s += "{}";
  JsonObjectFramer f;
  std::vector<std::string> objects;
  ASSERT_TRUE(f.Feed(s, &objects).ok());
  EXPECT_EQ(objects.size(), 200000u);
}

}  // namespace
}  // namespace spiderpool::kube
