#pragma once
// One logging wrapper for the project: levels, a verbosity knob for debug detail, and
// key=value fields. Lines look like:
//   I1121 09:31:02.123456 controller=ippool key=pool-a msg="reconciled" took=3ms
// Output goes to stderr by default; tests may install a sink to capture lines.

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace spiderpool::base {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Parses "debug"/"info"/"warn"/"warning"/"error" (case-insensitive; upstream's "fatal" and
// "panic" are "error"); false if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* out);

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Verbosity for V(n) debug lines (klog style); default 0.
void SetLogVerbosity(int v);
int GetLogVerbosity();
// Replaces the output sink (nullptr restores stderr). The sink gets whole lines.
void SetLogSink(std::function<void(std::string_view line)> sink);

// A status for a log line or a message: "CODE: message", without its payloads (kube/rest's
// errors carry the HTTP code, the reason and the whole metav1.Status JSON as payloads, which
// would repeat the message as escaped JSON on every line).
std::string StatusText(const absl::Status& s);

// Builds one log line; emitted when destroyed. Use via the SP_LOG / SP_VLOG macros.
class LogLine {
 public:
  LogLine(LogLevel level, bool enabled);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  LogLine& Msg(std::string_view msg);
  template <typename T>
  LogLine& KV(std::string_view key, const T& value) {
    if (!enabled_) return *this;
    std::ostringstream os;
    os << value;
    return AddField(key, os.str());
  }
  LogLine& KV(std::string_view key, std::string_view value) { return AddField(key, value); }
  LogLine& KV(std::string_view key, const std::string& value) { return AddField(key, value); }
  LogLine& KV(std::string_view key, const char* value) { return AddField(key, value); }
  LogLine& KV(std::string_view key, const absl::Status& value) {
    return enabled_ ? AddField(key, StatusText(value)) : *this;
  }

 private:
  LogLine& AddField(std::string_view key, std::string_view value);
  LogLevel level_;
  bool enabled_;
  std::string fields_;
};

bool LogEnabled(LogLevel level);

}  // namespace spiderpool::base

#define SP_LOG(level)                                                         \
  ::spiderpool::base::LogLine(::spiderpool::base::LogLevel::k##level,         \
                              ::spiderpool::base::LogEnabled(                 \
                                  ::spiderpool::base::LogLevel::k##level))
#define SP_VLOG(n)                                                          \
  ::spiderpool::base::LogLine(::spiderpool::base::LogLevel::kDebug,         \
                              ::spiderpool::base::GetLogVerbosity() >= (n))
