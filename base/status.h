#pragma once
// Status helpers: absl::Status/StatusOr are the error type across every layer.
// Debian's abseil (20220623) lacks RETURN_IF_ERROR/ASSIGN_OR_RETURN, so they live here.

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/strings.h"

#define SP_STATUS_CONCAT_INNER_(a, b) a##b
#define SP_STATUS_CONCAT_(a, b) SP_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define SP_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    ::absl::Status sp_status_tmp_ = (expr);          \
    if (!sp_status_tmp_.ok()) return sp_status_tmp_; \
  } while (0)

// `SP_ASSIGN_OR_RETURN(auto x, Foo());` declares/assigns x or returns the error.
#define SP_ASSIGN_OR_RETURN(lhs, expr) \
  SP_ASSIGN_OR_RETURN_IMPL_(SP_STATUS_CONCAT_(sp_statusor_, __LINE__), lhs, expr)
#define SP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = std::move(tmp).value()

namespace spiderpool::base {

// Prefixes the message of a non-OK status with context, keeping its code.
inline absl::Status Annotate(const absl::Status& s, std::string_view context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), base::StrCat(context, ": ", FromAbsl(s.message())));
}

}  // namespace spiderpool::base
