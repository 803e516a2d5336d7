#include "kube/rest/errors.h"

#include "gtest/gtest.h"

namespace spiderpool::kube {
namespace {

TEST(ErrorsTest, StatusBodyKeepsCodeReasonAndJson) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"pods \"p1\" not found","reason":"NotFound",
    "details":{"name":"p1","kind":"pods"},"code":404})";
  absl::Status s = StatusFromResponse(404, body);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "pods \"p1\" not found");
  EXPECT_TRUE(kube::IsNotFound(s));
  EXPECT_FALSE(kube::IsConflict(s));
  EXPECT_FALSE(kube::IsAlreadyExists(s));
  EXPECT_EQ(HttpCode(s), 404);
  EXPECT_EQ(Reason(s), "NotFound");
  std::optional<api::Status> st = ApiStatus(s);
  ASSERT_TRUE(st.has_value());
  ASSERT_TRUE(st->details.has_value());
  EXPECT_EQ(st->details->name, "p1");
}

TEST(ErrorsTest, AlreadyExistsIsNotConflict) {
  absl::Status s = StatusFromResponse(
      409, R"({"kind":"Status","metadata":{},"reason":"AlreadyExists","code":409,"message":"x"})");
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(kube::IsAlreadyExists(s));
  EXPECT_FALSE(kube::IsConflict(s));

  absl::Status c = StatusFromResponse(
      409, R"({"kind":"Status","metadata":{},"reason":"Conflict","code":409,"message":"x"})");
  EXPECT_EQ(c.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(kube::IsConflict(c));
  EXPECT_FALSE(kube::IsAlreadyExists(c));
}

TEST(ErrorsTest, InvalidCarriesCauses) {
  std::string body = R"({"kind":"Status","metadata":{},"status":"Failure","reason":"Invalid",
    "code":422,"message":"bad","details":{"causes":[
      {"reason":"FieldValueInvalid","message":"not an IP","field":"spec.ips[0]"},
      {"reason":"FieldValueRequired","message":"Required value","field":"spec.subnet"}]}})";
  absl::Status s = StatusFromResponse(422, body);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(kube::IsInvalid(s));
  std::vector<api::StatusCause> causes = StatusCauses(s);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].field, "spec.ips[0]");
  EXPECT_EQ(causes[1].reason, "FieldValueRequired");
}

TEST(ErrorsTest, GoneAndExpired) {
  absl::Status gone = StatusFromResponse(
      410, R"({"kind":"Status","metadata":{},"reason":"Expired","code":410,"message":"too old"})");
  EXPECT_TRUE(kube::IsGone(gone));
  EXPECT_EQ(gone.code(), absl::StatusCode::kOutOfRange);
  absl::Status g2 = StatusFromStatusJson(
      base::Json::parse(R"({"kind":"Status","metadata":{},"reason":"Gone","code":410})"));
  EXPECT_TRUE(kube::IsGone(g2));
  EXPECT_EQ(HttpCode(g2), 410);
}

TEST(ErrorsTest, RetryAfterFromHeaderOrDetails) {
  absl::Status s = StatusFromResponse(
      429, R"({"kind":"Status","metadata":{},"reason":"TooManyRequests","code":429})", "3");
  EXPECT_TRUE(kube::IsTooManyRequests(s));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(RetryAfter(s).has_value());
  EXPECT_EQ(*RetryAfter(s), absl::Seconds(3));

  absl::Status d = StatusFromResponse(
      429, R"({"kind":"Status","metadata":{},"reason":"TooManyRequests","code":429,
               "details":{"retryAfterSeconds":7}})");
  ASSERT_TRUE(RetryAfter(d).has_value());
  EXPECT_EQ(*RetryAfter(d), absl::Seconds(7));

  EXPECT_FALSE(RetryAfter(StatusFromResponse(500, "")).has_value());
}

TEST(ErrorsTest, ServerErrorsAndTimeouts) {
  absl::Status internal = StatusFromResponse(500, "");
  EXPECT_TRUE(kube::IsServerError(internal));
  EXPECT_EQ(internal.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(kube::IsTimeout(internal));

  absl::Status unavailable = StatusFromResponse(503, "");
  EXPECT_TRUE(kube::IsServerError(unavailable));
  EXPECT_EQ(unavailable.code(), absl::StatusCode::kUnavailable);

  absl::Status bad_gateway = StatusFromResponse(502, "<html>bad gateway</html>");
  EXPECT_TRUE(kube::IsServerError(bad_gateway));
  EXPECT_EQ(bad_gateway.code(), absl::StatusCode::kUnavailable);

  absl::Status timeout = StatusFromResponse(
      504, R"({"kind":"Status","metadata":{},"reason":"Timeout","code":504})");
  EXPECT_TRUE(kube::IsTimeout(timeout));
  EXPECT_TRUE(kube::IsServerError(timeout));
  EXPECT_EQ(timeout.code(), absl::StatusCode::kDeadlineExceeded);

  absl::Status server_timeout = StatusFromResponse(
      500, R"({"kind":"Status","metadata":{},"reason":"ServerTimeout","code":500})");
  EXPECT_TRUE(kube::IsTimeout(server_timeout));
  EXPECT_EQ(server_timeout.code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(ErrorsTest, AuthErrors) {
  EXPECT_TRUE(kube::IsUnauthorized(StatusFromResponse(401, "Unauthorized")));
  EXPECT_EQ(StatusFromResponse(401, "").code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(kube::IsForbidden(StatusFromResponse(403, "")));
  EXPECT_EQ(StatusFromResponse(403, "").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(kube::IsForbidden(StatusFromResponse(401, "")));
}

TEST(ErrorsTest, NonStatusBodyFromProxy) {
  absl::Status s = StatusFromResponse(404, "<html><body>404 page not found\x01</body></html>");
  EXPECT_TRUE(kube::IsNotFound(s));
  EXPECT_EQ(Reason(s), "NotFound");
  EXPECT_NE(std::string(s.message()).find("404 page not found"), std::string::npos);
  EXPECT_EQ(std::string(s.message()).find('\x01'), std::string::npos);
  std::optional<api::Status> st = ApiStatus(s);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->code, 404);

  // A JSON body that is not a Status.
  absl::Status j = StatusFromResponse(409, R"({"error":"conflict"})");
  EXPECT_TRUE(kube::IsConflict(j));
  // Unknown code: reason unknown, code kept.
  absl::Status teapot = StatusFromResponse(418, "");
  EXPECT_EQ(HttpCode(teapot), 418);
  EXPECT_EQ(Reason(teapot), "");
  EXPECT_EQ(teapot.code(), absl::StatusCode::kUnknown);
}

TEST(ErrorsTest, PredicatesNeedMatchingReasonNotJustCode) {
  // A 404 whose reason says something else is not NotFound (apimachinery semantics).
  absl::Status s = StatusFromResponse(
      404, R"({"kind":"Status","metadata":{},"reason":"MethodNotAllowed","code":404})");
  EXPECT_FALSE(kube::IsNotFound(s));
  EXPECT_TRUE(kube::IsMethodNotAllowed(s));
}

TEST(ErrorsTest, PlainStatusesFallBackToAbslCode) {
  EXPECT_TRUE(kube::IsNotFound(absl::NotFoundError("x")));
  EXPECT_TRUE(kube::IsConflict(absl::AbortedError("x")));
  EXPECT_TRUE(kube::IsAlreadyExists(absl::AlreadyExistsError("x")));
  EXPECT_TRUE(kube::IsGone(absl::OutOfRangeError("x")));
  EXPECT_FALSE(kube::IsInvalid(absl::InvalidArgumentError("x")));
  EXPECT_FALSE(kube::IsServerError(absl::InternalError("x")));
  EXPECT_FALSE(kube::IsNotFound(absl::OkStatus()));
  EXPECT_FALSE(kube::IsNotFound(absl::InternalError("x")));
}

TEST(ErrorsTest, WithContextKeepsPayloads) {
  absl::Status s = MakeApiError(409, "Conflict", "the object has been modified");
  absl::Status annotated = WithContext(s, "updating pool a");
  EXPECT_EQ(annotated.message(), "updating pool a: the object has been modified");
  EXPECT_TRUE(kube::IsConflict(annotated));
  EXPECT_EQ(HttpCode(annotated), 409);
}

TEST(ErrorsTest, MakeApiError) {
  absl::Status s = MakeApiError(429, "TooManyRequests", "slow down", 2);
  EXPECT_TRUE(kube::IsTooManyRequests(s));
  EXPECT_EQ(RetryAfter(s), absl::Seconds(2));
  EXPECT_EQ(s.message(), "slow down");
}

TEST(ErrorsTest, CodeTable) {
  EXPECT_EQ(CodeForApiError(404, "NotFound"), absl::StatusCode::kNotFound);
  EXPECT_EQ(CodeForApiError(409, "AlreadyExists"), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeForApiError(409, "Conflict"), absl::StatusCode::kAborted);
  EXPECT_EQ(CodeForApiError(422, "Invalid"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForApiError(400, "BadRequest"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForApiError(410, "Expired"), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CodeForApiError(410, "Gone"), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CodeForApiError(429, "TooManyRequests"), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeForApiError(504, "Timeout"), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(CodeForApiError(500, "InternalError"), absl::StatusCode::kInternal);
  EXPECT_EQ(CodeForApiError(503, "ServiceUnavailable"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForApiError(405, "MethodNotAllowed"), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CodeForApiError(401, ""), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CodeForApiError(403, ""), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace spiderpool::kube
