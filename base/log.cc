#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace spiderpool::base {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_verbosity{0};
std::mutex g_sink_mu;
std::function<void(std::string_view)>* g_sink = nullptr;  // guarded by g_sink_mu

bool NeedsQuoting(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

void AppendValue(std::string* out, std::string_view v) {
  if (!NeedsQuoting(v)) {
    out->append(v);
    return;
  }
  out->push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  std::string t = absl::AsciiStrToLower(absl::string_view(text.data(), text.size()));
  if (t == "debug") *out = LogLevel::kDebug;
  else if (t == "info") *out = LogLevel::kInfo;
  else if (t == "warn" || t == "warning") *out = LogLevel::kWarning;
  // zap's fatal and panic (upstream's levels) log as errors here.
  else if (t == "error" || t == "fatal" || t == "panic") *out = LogLevel::kError;
  else return false;
  return true;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
void SetLogVerbosity(int v) { g_verbosity.store(v); }
int GetLogVerbosity() { return g_verbosity.load(); }

void SetLogSink(std::function<void(std::string_view)> sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  delete g_sink;
  g_sink = sink ? new std::function<void(std::string_view)>(std::move(sink)) : nullptr;
}

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

LogLine::LogLine(LogLevel level, bool enabled) : level_(level), enabled_(enabled) {}

std::string StatusText(const absl::Status& s) {
  return s.ToString(absl::StatusToStringMode::kWithNoExtraData);
}

LogLine& LogLine::Msg(std::string_view msg) { return AddField("msg", msg); }

LogLine& LogLine::AddField(std::string_view key, std::string_view value) {
  if (!enabled_) return *this;
  fields_.push_back(' ');
  fields_.append(key);
  fields_.push_back('=');
  AppendValue(&fields_, value);
  return *this;
}

LogLine::~LogLine() {
  if (!enabled_) return;
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char head[64];
  std::snprintf(head, sizeof(head), "%c%02d%02d %02d:%02d:%02d.%06lld",
                kLetters[static_cast<int>(level_)], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
  std::string line = head;
  line += fields_;
  std::lock_guard<std::mutex> lock(g_sink_mu);
  if (g_sink != nullptr) {
    (*g_sink)(line);
  } else {
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace spiderpool::base
