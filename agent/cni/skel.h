#pragma once
// libcni skel's generic steps, shared by our three plugins (spiderpool, ifacer, coordinator):
// the process-facing types (Env, Outcome, ProcessHooks), the error/success outcomes, and the
// protocol preamble every command goes through before the plugin's own handler.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/cni/cni.h"

namespace spiderpool::agent::cni {

// The CNI_* environment (an unset variable and an empty one are the same, as in libcni).
struct Env {
  std::string command;       // CNI_COMMAND
  std::string container_id;  // CNI_CONTAINERID
  std::string netns;         // CNI_NETNS
  std::string ifname;        // CNI_IFNAME
  std::string args;          // CNI_ARGS
  std::string path;          // CNI_PATH
  static Env FromProcess();
};

struct Outcome {
  int exit_code = 0;
  std::string stdout_text;  // the result / error JSON (empty for DEL, CHECK, GC, STATUS success)
  std::string stderr_text;  // only the "about" text when CNI_COMMAND is unset
};

// Reads stdin into *out; false with *error on failure.
using ReadStdinFn = std::function<bool(std::string* out, std::string* error)>;

// What the process (plugin_main.h) gives a plugin's Run.
struct ProcessHooks {
  // Called once the invocation's deadline is known, with what to print if the process has to
  // give up at the deadline (PluginMain arms a watchdog with it).
  std::function<void(std::chrono::steady_clock::time_point deadline, const Outcome& on_timeout)>
      deadline_known;
  // Reads stdin; not called for VERSION (libcni does not send a config there).
  ReadStdinFn read_stdin;
};

// Exit 1 with the error JSON (echoing `cni_version`, "" = the latest) on stdout.
Outcome Fail(const CniError& e, std::string_view cni_version);
// Exit 0 with `out` (if any) and a newline on stdout.
Outcome Succeed(std::string out = "");

// What the preamble leaves for the plugin's own command handler.
struct SkelRequest {
  std::string command;      // ADD, DEL, CHECK, GC, STATUS
  Json json;                // stdin, a JSON object
  std::string version;      // the config's cniVersion as parsed ("0.1.0" when absent)
  std::string echo;         // the version errors echo (skel: "" when the config has none)
  std::string cni_version;  // the config's (kLatestVersion when absent)
};

// Where a plugin departs from libcni skel's preamble (the defaults are skel's).
struct SkelOptions {
  // The coordinator's: errors echo the parsed version ("0.1.0" when the config has none) and a
  // stdin parse error echoes none; skel echoes the config's cniVersion when it has one.
  bool echo_parsed_version = false;
  // The coordinator's: the supported-version check (1) runs before CHECK's cniVersion >= 0.4.0
  // (then 1, never 6); skel checks CHECK's floor first (a malformed version is 6).
  bool supported_version_first = false;
};

// Runs skel's checks in its order: no CNI_COMMAND -> about text on stderr (exit 0); required env
// per command (4); VERSION -> version info; unknown command (4); stdin (5); JSON object, string
// cniVersion/name, network name (6/7); container ID and interface name (3/4); CHECK needs
// cniVersion >= 0.4.0 (1; 6 when malformed); supported version for ADD/DEL/CHECK (1). Returns
// the outcome to print when the invocation ends here, else fills *req.
std::optional<Outcome> RunSkel(const Env& env, std::string_view about,
                               const ReadStdinFn& read_stdin, SkelRequest* req,
                               const SkelOptions& options = {});

}  // namespace spiderpool::agent::cni
